"""A dependency-free text progress bar for long host-side loops.

Used by the simulator (chunked long runs) and by the experiment scripts. It writes to
stderr, redraws in place on a terminal and prints a few plain lines otherwise (CI logs).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


class Progress:
    """Progress over ``total`` units of work.

    Example:
        >>> with Progress(10, "simulate") as bar:
        ...   for _ in range(10):
        ...     bar.update(1)
    """

    def __init__(self, total: int, desc: str = "", *, enabled: bool = True, width: int = 28):
        self.total = max(int(total), 1)
        self.desc = desc
        self.enabled = enabled
        self.width = width
        self.done = 0
        self.start = time.perf_counter()
        self._tty = sys.stderr.isatty()
        self._last_plain = -1

    def update(self, n: int = 1, *, info: str = "") -> None:
        self.done = min(self.done + n, self.total)
        if not self.enabled:
            return
        frac = self.done / self.total
        elapsed = time.perf_counter() - self.start
        eta = f"{elapsed / frac - elapsed:6.1f}s" if frac > 0 else "     ?"
        line = f"{self.desc} {self.done}/{self.total} {elapsed:6.1f}s eta {eta} {info}"
        if self._tty:
            filled = int(round(self.width * frac))
            bar = "#" * filled + "-" * (self.width - filled)
            sys.stderr.write(f"\r{self.desc} [{bar}] {line[len(self.desc) + 1:]}   ")
            sys.stderr.flush()
        else:
            decile = int(frac * 10)
            if decile != self._last_plain or self.done == self.total:
                self._last_plain = decile
                sys.stderr.write(line + "\n")

    def close(self) -> None:
        if self.enabled and self._tty:
            sys.stderr.write("\n")
            sys.stderr.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(iterable: Iterable[T], desc: str = "", *, total: int | None = None,
                          enabled: bool = True) -> Iterator[T]:
    """Wraps an iterable with a :class:`Progress` bar."""
    if total is None:
        total = len(iterable)  # type: ignore[arg-type]
    with Progress(total, desc, enabled=enabled) as bar:
        for item in iterable:
            yield item
            bar.update(1)
