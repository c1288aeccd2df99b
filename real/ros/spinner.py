"""Spin one rclpy node's callbacks on a daemon thread, so the caller can block on results
(orchestration in real/stages.py, and the tests' stand-in robots and watchers)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from rclpy.executors import SingleThreadedExecutor

log = logging.getLogger(__name__)


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


def _interrupt(signum: int, frame: Any) -> None:
    import signal

    raise KeyboardInterrupt(signal.Signals(signum).name)


def init_ros(ros_args: list[str], domain_id: int | None) -> None:
    """`rclpy.init` for a node process, with our signal handling instead of rclpy's.

    rclpy's handler shuts the context down the moment SIGINT arrives, under a control loop that is
    still publishing ("publisher's context is invalid", a FATAL on every Ctrl-C) and a spin thread
    still waiting ("ExternalShutdownException"). With it off, SIGINT is Python's KeyboardInterrupt
    and SIGTERM is made one, so `run_node_until_stopped` stops the node's threads first and shuts
    ROS down after them.

    SIGINT's handler is set here too: a process started from a shell script's background job inherits
    SIGINT ignored (POSIX shells do that without job control), and Python then installs no
    KeyboardInterrupt, so such a node ignored every stop request and was killed 15 s later (each of
    the main job's deploy episodes lost 15 s that way, and ROS tests run from a background job failed).
    """
    import signal

    import rclpy
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(args=ros_args, domain_id=domain_id, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)


def run_node_until_stopped(node: Any, duration_s: float | None) -> None:
    """A node's process main loop (after `init_ros`): `start()`, wait for SIGINT / SIGTERM, rclpy
    shutdown or `duration_s`, then `stop()` and shut rclpy down (the bridge and the policy node share it)."""
    import time

    import rclpy

    reason = "rclpy shutdown"
    try:
        node.start()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        while rclpy.ok():
            if deadline is not None and time.monotonic() >= deadline:
                reason = f"--duration {duration_s:g} s"
                break
            time.sleep(0.1)
    except KeyboardInterrupt as exc:
        reason = str(exc) or "SIGINT"  # Python's own SIGINT handler raises it without a message
    finally:
        node.stop()
        rclpy.try_shutdown()
    log.info("stopped on %s: threads joined, then ROS shut down", reason)
