"""Spin one rclpy node's callbacks on a daemon thread, so the caller can block on results
(orchestration in real/stages.py, and the tests' stand-in robots and watchers)."""

from __future__ import annotations

import threading
from typing import Any

from rclpy.executors import SingleThreadedExecutor


class BackgroundSpinner:
    def __init__(self, node: Any, context: Any, period_s: float = 0.02) -> None:
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(node)
        self.period_s = period_s
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=self.period_s)

    def close(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        self.thread.join(timeout_s)
        self.executor.shutdown()


def run_node_until_stopped(node: Any, duration_s: float | None) -> None:
    """A node's process main loop: `start()`, wait for Ctrl-C, rclpy shutdown or `duration_s`,
    then `stop()` and shut rclpy down (the bridge and the policy node share it)."""
    import time

    import rclpy

    node.start()
    try:
        deadline = None if duration_s is None else time.monotonic() + duration_s
        while rclpy.ok() and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
    finally:
        node.stop()
        rclpy.try_shutdown()
