"""Atomic file writes shared by the runner and :meth:`jaxmdp.MDP.save`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path | str, write: Callable[[str], object],
                 suffix: str = ".tmp") -> Path:
    """Calls ``write(tmp_path)`` on a temporary file beside ``path``, then renames it.

    A reader never sees a half-written ``path``: it holds either its old content or the
    new one. The temporary file is removed if ``write`` raises.

    Args:
        path: the file to write; its folder is created if needed.
        write: called with the temporary file's path (a ``str``); writes the content.
        suffix: the temporary file's suffix (some writers choose the format by it).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from jaxmdp.runner import write_atomic
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = write_atomic(Path(folder) / "a.txt",
        ...                         lambda tmp: Path(tmp).write_text("hello"))
        ...     path.read_text()
        'hello'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
