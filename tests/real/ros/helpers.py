"""Helpers shared by the ROS 2 tests."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(pred: Callable[[], object], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
