"""JAX's persistent compilation cache, on by default for everything jaxmdp runs.

Nearly all the time of a first ``jaxmdp run``, experiment script or :func:`jaxmdp.simulate`
call is XLA compilation, and without a persistent cache every new process compiles every
program again. jaxmdp therefore turns on JAX's own persistent compilation cache
(``jax_compilation_cache_dir``) so that a program compiled once is loaded from disk by
every later process that needs the same program (same function, shapes, dtypes, options,
JAX version and device), instead of compiled again.

**Where.** In the user's cache directory, ``platformdirs.user_cache_dir("jaxmdp")``:
``$XDG_CACHE_HOME/jaxmdp`` (default ``~/.cache/jaxmdp``) on Linux,
``~/Library/Caches/jaxmdp`` on macOS, ``%LOCALAPPDATA%\\jaxmdp\\Cache`` on Windows. The
environment variable ``JAXMDP_CACHE_DIR`` moves it. Each compiled program is one file
``<key>-cache`` there (JAX's format).

**When.** The ``jaxmdp`` command line (``jaxmdp run``) and the scripts in ``experiments/``
turn it on when they start; :func:`jaxmdp.simulate` turns it on at its first call when the
user has not configured a cache directory of their own (``jax_compilation_cache_dir``,
e.g. through the environment variable ``JAX_COMPILATION_CACHE_DIR`` or
``jax.config.update``): a configured directory and its thresholds are left exactly as the
user set them. jaxmdp caches every program whatever its compile time or size
(``jax_persistent_cache_min_compile_time_secs = 0``,
``jax_persistent_cache_min_entry_size_bytes = -1``); JAX's defaults skip programs that
compile in under a second, which are most of jaxmdp's.

**Turning it off.** ``jaxmdp run --no-compile-cache``, ``--no-compile-cache`` on an
experiment script, or ``JAXMDP_NO_COMPILE_CACHE=1`` in the environment (for this process
and every process it starts): JAX's persistent cache is then off altogether
(``jax_enable_compilation_cache = False``), also in a directory the user configured.
Setting ``jax_enable_compilation_cache`` to False oneself does the same. The scripts
that measure time (``benchmarks/``, ``experiments/timing.py``,
``experiments/scaling.py``) turn it off themselves, so the compile times they report are
compiles, not loads.

**Clearing it.** ``jaxmdp cache`` prints its location and size and ``jaxmdp cache
--clear`` deletes its entries (:func:`clear_compilation_cache`); deleting the directory
does the same. Entries are never invalid, only unused: JAX's key covers the program, the
compile options, and the JAX, jaxlib and device versions, so an upgrade compiles afresh
and leaves the old entries on disk until cleared.

The cache is trusted code: anyone who can write to its directory can make a JAX process
that reads it run their code, so do not point ``JAXMDP_CACHE_DIR`` at a directory others
can write to.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import NamedTuple

#: Environment variable that moves the cache directory.
CACHE_DIR_VARIABLE = "JAXMDP_CACHE_DIR"

#: Environment variable that turns the cache off (``1``, ``true``, ``yes`` or ``on``).
DISABLE_VARIABLE = "JAXMDP_NO_COMPILE_CACHE"

#: Suffixes of the files JAX's file cache writes: an entry, and its access time (written
#: only when a maximum cache size is set).
_ENTRY_SUFFIXES = ("-cache", "-atime")


def cache_dir() -> Path:
    """The directory jaxmdp puts JAX's compilation cache in.

    ``$JAXMDP_CACHE_DIR`` when set (``~`` expanded), else
    ``platformdirs.user_cache_dir("jaxmdp")`` (``$XDG_CACHE_HOME/jaxmdp`` on Linux). The
    directory need not exist yet.

    Returns:
        The directory, a :class:`~pathlib.Path`.

    Example:
        >>> import os
        >>> from unittest import mock
        >>> from jaxmdp import _cache
        >>> with mock.patch.dict(os.environ, {"JAXMDP_CACHE_DIR": "/tmp/jaxmdp-cache"}):
        ...     print(_cache.cache_dir())
        /tmp/jaxmdp-cache
    """
    override = os.environ.get(CACHE_DIR_VARIABLE, "").strip()
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("jaxmdp", appauthor=False))


def is_disabled() -> bool:
    """Whether ``JAXMDP_NO_COMPILE_CACHE`` turns the cache off in this process.

    Returns:
        True when the variable is ``1``, ``true``, ``yes`` or ``on`` (any case).

    Example:
        >>> from jaxmdp import _cache
        >>> isinstance(_cache.is_disabled(), bool)
        True
    """
    return os.environ.get(DISABLE_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def disable_compilation_cache() -> None:
    """Turns the persistent compilation cache off for this process and those it starts.

    Sets ``JAXMDP_NO_COMPILE_CACHE=1``, so that :func:`enable_compilation_cache` (and
    therefore :func:`jaxmdp.simulate`) leaves the cache off, here and in child processes,
    and sets ``jax_enable_compilation_cache`` to False, so that a cache directory the user
    configured in JAX is not used either. JAX decides whether to use its cache once per
    process, at the first compilation: call this before anything is compiled (the
    timing scripts call it when they start).
    """
    import jax

    os.environ[DISABLE_VARIABLE] = "1"
    jax.config.update("jax_enable_compilation_cache", False)


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Turns on JAX's persistent compilation cache, with every program cached.

    Sets ``jax_compilation_cache_dir`` to ``path`` (default :func:`cache_dir`) and the
    thresholds ``jax_persistent_cache_min_compile_time_secs = 0`` and
    ``jax_persistent_cache_min_entry_size_bytes = -1`` so that every compiled program is
    written, however quickly it compiled. Returns None and leaves the cache off when
    ``JAXMDP_NO_COMPILE_CACHE`` is set (:func:`is_disabled`; JAX's cache is then turned
    off, as :func:`disable_compilation_cache` does), when JAX's cache is turned off
    (``jax_enable_compilation_cache`` False), or when the directory cannot be created
    (with a warning). With ``path=None`` and a cache directory already configured in JAX
    (by the user, ``JAX_COMPILATION_CACHE_DIR``, or an earlier call), that configuration
    is left as it is and its directory returned. JAX sets its cache up at the first
    compilation after a directory is set, once per process: programs compiled before
    this call are not written.

    Args:
        path: the cache directory; default :func:`cache_dir`, unless JAX already has one.

    Returns:
        The directory JAX's cache uses from now on, or None when it stays off.

    Example:
        >>> import os, jax
        >>> from unittest import mock
        >>> from jaxmdp import _cache
        >>> saved = (jax.config.jax_compilation_cache_dir,
        ...          jax.config.jax_enable_compilation_cache)
        >>> jax.config.update("jax_compilation_cache_dir", "/tmp/my-jax-cache")
        >>> jax.config.update("jax_enable_compilation_cache", True)
        >>> with mock.patch.dict(os.environ, {"JAXMDP_NO_COMPILE_CACHE": "0"}):
        ...     str(_cache.enable_compilation_cache())
        '/tmp/my-jax-cache'
        >>> jax.config.update("jax_compilation_cache_dir", saved[0])
        >>> jax.config.update("jax_enable_compilation_cache", saved[1])
    """
    import jax

    if is_disabled():
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    if not jax.config.jax_enable_compilation_cache:
        return None
    configured = jax.config.jax_compilation_cache_dir
    if path is None and configured:
        return Path(configured)
    directory = Path(path).expanduser() if path is not None else cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        warnings.warn(f"jaxmdp: compilation cache off, cannot create {directory}: {error}",
                      RuntimeWarning, stacklevel=2)
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return directory


def active_cache_dir() -> Path:
    """The directory :func:`enable_compilation_cache` would use now (without ``path``).

    JAX's configured ``jax_compilation_cache_dir`` when set, else :func:`cache_dir`.

    Returns:
        The directory, a :class:`~pathlib.Path`.

    Example:
        >>> from jaxmdp import _cache
        >>> isinstance(_cache.active_cache_dir(), Path)
        True
    """
    import jax

    configured = jax.config.jax_compilation_cache_dir
    return Path(configured) if configured else cache_dir()


class CacheInfo(NamedTuple):
    """What a compilation cache directory holds.

    Attributes:
        path: the directory.
        entries: the number of compiled programs (``*-cache`` files).
        size_bytes: the bytes of its entry files (``*-cache`` and ``*-atime``).
    """

    path: Path
    entries: int
    size_bytes: int


def _entry_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir()
            if p.is_file() and p.name.endswith(_ENTRY_SUFFIXES)]


def compilation_cache_info(path: str | os.PathLike | None = None) -> CacheInfo:
    """Counts the entries of a compilation cache directory.

    Args:
        path: the directory; default :func:`active_cache_dir`.

    Returns:
        :class:`CacheInfo` (zero entries for a directory that does not exist).

    Example:
        >>> import tempfile
        >>> from jaxmdp import _cache
        >>> _cache.compilation_cache_info(tempfile.mkdtemp()).entries
        0
    """
    directory = Path(path) if path is not None else active_cache_dir()
    files = _entry_files(directory)
    return CacheInfo(path=directory,
                     entries=sum(p.name.endswith("-cache") for p in files),
                     size_bytes=sum(p.stat().st_size for p in files))


def clear_compilation_cache(path: str | os.PathLike | None = None) -> CacheInfo:
    """Deletes the entries of a compilation cache directory.

    Only JAX's entry files (``*-cache``, ``*-atime``) are deleted; the directory and any
    other file in it stay. Programs are compiled again, and written again, the next time
    they are needed.

    Args:
        path: the directory; default :func:`active_cache_dir`.

    Returns:
        :class:`CacheInfo` of what was deleted.

    Example:
        >>> import tempfile
        >>> from jaxmdp import _cache
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "jit_f-0123-cache").write_bytes(b"12345")
        >>> _cache.clear_compilation_cache(folder).size_bytes
        5
        >>> _cache.compilation_cache_info(folder).entries
        0
    """
    info = compilation_cache_info(path)
    for entry in _entry_files(info.path):
        entry.unlink(missing_ok=True)
    return info
