"""Atomic file writes shared by the runner and :meth:`jaxmdp.MDP.save`, and settings as the
JSON data the results files hold (shared by the runner and the sweeps)."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["json_plain", "jsonable", "write_atomic"]


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


def jsonable(value):
    """``value`` as JSON data: named tuples and dataclasses become dicts (field order),
    tuples lists, arrays nested lists, enums their names, functions and classes their
    qualified names, non-finite floats the strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if hasattr(value, "_asdict"):
        return {str(k): jsonable(v) for k, v in value._asdict().items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "__array__") and hasattr(value, "shape"):
        return jsonable(np.asarray(value).tolist())
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return repr(value)


def json_plain(value):
    """``value`` as it reads back from a JSON file (tuples become lists, and so on)."""
    return json.loads(json.dumps(jsonable(value)))
