"""vla/progress.py: a bar on a terminal; in a log, whole lines at most every interval and the last count once."""

from __future__ import annotations

import io

from vla.progress import LineProgress, progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_whole_lines_and_no_carriage_returns() -> None:
    out = io.StringIO()
    bar = progress(total=1000, desc="train", file=out, mininterval=0)
    assert isinstance(bar, LineProgress)
    for _ in range(1000):
        bar.update(1)
    bar.close()
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert lines[-1].startswith("train: 1000/1000 (100%)") and lines.count(lines[-1]) == 1
    assert all(line.startswith("train: ") for line in lines)


def test_a_log_gets_at_most_one_line_per_interval() -> None:
    out = io.StringIO()
    bar = progress(range(5000), desc="eval", file=out)  # the default interval: tens of seconds
    for _ in bar:
        pass
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[-1]]
    assert out.getvalue().startswith("eval: 5000/5000")


def test_a_terminal_keeps_tqdms_bar() -> None:
    out = FakeTerminal()
    bar = progress(total=3, desc="x", file=out, mininterval=0)
    bar.update(3)
    bar.close()
    assert not isinstance(bar, LineProgress) and "\r" in out.getvalue()


def test_a_disabled_bar_writes_nothing() -> None:
    out = io.StringIO()
    bar = progress(total=3, desc="x", file=out, disable=True)
    bar.update(3)
    bar.close()
    assert out.getvalue() == ""


def test_forced_refreshes_wait_for_the_interval() -> None:
    out = io.StringIO()
    bar = progress(total=100, desc="train", file=out)
    for _ in range(100):
        bar.update(1)
        bar.set_postfix(loss=0.5)  # the trainer's: forces a refresh
    bar.close()
    assert len(out.getvalue().splitlines()) <= 2  # the first count at most, and the last
