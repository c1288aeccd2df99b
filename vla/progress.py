"""Progress bars that suit where the output goes.

On a terminal: tqdm's bar, redrawn in place. Anywhere else (a CI log, `nohup ... > log`, a pipe): tqdm
redraws with carriage returns, which a file keeps, so one `make run` wrote 5,400 lines and 500 KB of
bar updates. There the same object prints one plain line at most every `LINE_INTERVAL_S` seconds, and
one when it finishes.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from tqdm import tqdm

LINE_INTERVAL_S = 30.0


class LineProgress(tqdm):
    """tqdm for non-interactive output: whole lines, at most one per `mininterval` seconds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("mininterval", LINE_INTERVAL_S)
        kwargs.setdefault("maxinterval", LINE_INTERVAL_S * 4)
        kwargs.setdefault("bar_format", "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%) [{elapsed}<{remaining}, "
                                        "{rate_fmt}]" if kwargs.get("total") is not None or _has_len(args)
                          else "{desc}: {n_fmt} [{elapsed}, {rate_fmt}]")
        kwargs["dynamic_ncols"] = False
        self._shown, self._shown_at, self._closing = -1, float("-inf"), False
        super().__init__(*args, **kwargs)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        if msg == "":  # tqdm clearing the bar: nothing to clear in a log, and no carriage return either
            return False
        now = time.monotonic()
        # the 0% line at creation says nothing; a caller's forced refresh (set_postfix) waits its turn
        due = self._closing or now - self._shown_at >= self.mininterval
        if self.n > 0 and self.n != self._shown and due:
            self._shown, self._shown_at = self.n, now
            self.fp.write((msg if msg is not None else self.__str__()).strip() + "\n")
            self.fp.flush()
        return True

    def close(self) -> None:
        if not self.disable and self.n != self._shown:
            self._closing = True
            self.display()  # the last count, once
        self.leave = False  # tqdm's own close would add a newline or a carriage return
        super().close()


def _has_len(args: tuple[Any, ...]) -> bool:
    return bool(args) and hasattr(args[0], "__len__")


def interactive(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def progress(*args: Any, **kwargs: Any) -> tqdm:
    """`tqdm(*args, **kwargs)` on a terminal, `LineProgress` otherwise (same arguments)."""
    stream = kwargs.get("file")
    return tqdm(*args, **kwargs) if interactive(stream) else LineProgress(*args, **kwargs)
