"""Progress bars for long host-side loops, drawn by ``tqdm.auto``.

``tqdm.auto`` draws a text bar on a terminal (redrawn in place) and a widget in a Jupyter
notebook. :class:`Progress` is the small interface the simulator and the experiment
scripts share: a total, a description, ``update(n, info=...)`` and ``enabled=False`` to
draw nothing.
"""

from __future__ import annotations

from tqdm.auto import tqdm


class Progress:
    """Progress over ``total`` units of work (a ``tqdm.auto`` bar on stderr).

    Example:
        >>> with Progress(10, "simulate", enabled=False) as bar:
        ...   for _ in range(10):
        ...     bar.update(1)
    """

    def __init__(self, total: int, desc: str = "", *, enabled: bool = True):
        self.total = max(int(total), 1)
        self.done = 0
        self._bar = tqdm(total=self.total, desc=desc, disable=not enabled, dynamic_ncols=True,
                         mininterval=0.5)

    def update(self, n: int = 1, *, info: str = "") -> None:
        """Advances by ``n`` units; ``info`` replaces the text after the bar."""
        n = min(int(n), self.total - self.done)
        self.done += n
        if info:
            self._bar.set_postfix_str(info, refresh=False)
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
