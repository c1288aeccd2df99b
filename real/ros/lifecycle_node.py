"""The policy node as a managed (lifecycle) ROS 2 node, configured by ROS parameters.

  unconfigured --configure--> inactive --activate--> active --deactivate--> inactive --cleanup--> unconfigured

- configure: read the parameters (the deploy YAML as `real.ros.params` maps it), validate them as
  `--config` does, load the policy (the weights), create the subscriptions, publishers and services.
  Nothing is commanded yet. A bad parameter or a missing checkpoint fails the transition with the
  reason in the log; the node stays unconfigured.
- activate: the control loop runs (the first time it starts from the measured joint position).
- deactivate: the arm holds. The control loop keeps publishing, braking to a stop through the safety
  filter and then holding; the plan made before is dropped, and no inference runs.
- cleanup / shutdown: the control loop stops, everything created at configure is destroyed.
- Parameters may change only while unconfigured (they take effect at the next configure);
  `ros2 param set` on a configured node is refused with the reason.

The e-stop, `/diagnostics`, validation and recording are the policy node's (`real/ros/policy_node.py`).

Run (pip-wheel rclpy or a sourced system ROS 2):
  python -m real.ros.params configs/deploy/native_arm.yaml > /tmp/vla.params.yaml
  python -m real.ros.lifecycle_node --ros-args --params-file /tmp/vla.params.yaml
  ros2 lifecycle set /vla_policy configure && ros2 lifecycle set /vla_policy activate
`--autostart` configures and activates at once (real/ros/launch/vla_policy.launch.py uses it).
"""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

import rclpy
from rcl_interfaces.msg import SetParametersResult
from rclpy.executors import SingleThreadedExecutor
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.signals import SignalHandlerOptions

from real.config import deploy_config_from_dict, make_policy
from real.ros.params import NODE_NAME, unflatten
from real.ros.policy_node import PolicyNode

INACTIVE = ("inactive", "lifecycle state inactive: holding")
ROS_OWN_PARAMETERS = ("use_sim_time", "start_type_description_service")  # every rclpy node declares them


class LifecyclePolicyNode(LifecycleNode):
    def __init__(self, name: str = NODE_NAME, context: rclpy.context.Context | None = None, **kwargs: Any) -> None:
        super().__init__(name, context=context, automatically_declare_parameters_from_overrides=True, **kwargs)
        self.core: PolicyNode | None = None
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def deploy_parameters(self) -> dict[str, Any]:
        return {n: p.value for n, p in self._parameters.items()
                if n not in ROS_OWN_PARAMETERS and not n.startswith("qos_overrides.")}

    def _on_set_parameters(self, params: list[Any]) -> SetParametersResult:
        if self.core is not None:
            return SetParametersResult(successful=False, reason="the node is configured: parameters apply at "
                                       "configure (deactivate, cleanup, set, configure)")
        return SetParametersResult(successful=True)

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        flat = self.deploy_parameters()
        if not flat:
            self.get_logger().error("no parameters: start with --ros-args --params-file <file> "
                                    "(python -m real.ros.params configs/deploy/<robot>.yaml writes one)")
            return TransitionCallbackReturn.FAILURE
        try:
            cfg = deploy_config_from_dict(unflatten(flat))
            policy = make_policy(cfg.policy, 1.0 / cfg.executor.rate_hz, len(cfg.limits.names))
            core = PolicyNode(cfg, policy, node=self)
        except Exception as exc:  # a bad parameter, a missing checkpoint: say which, stay unconfigured
            self.get_logger().error(f"configure failed: {type(exc).__name__}: {exc}")
            return TransitionCallbackReturn.FAILURE
        core.set_hold(INACTIVE)
        self.core = core
        self.get_logger().info(f"configured: policy loaded, {cfg.executor.mode} at {cfg.executor.rate_hz:g} Hz")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        assert self.core is not None
        self.core.set_hold(None)
        if not self.core.started:
            self.core.start()
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        if self.core is not None:
            self.core.set_hold(INACTIVE)
        return super().on_deactivate(state)

    def _teardown(self) -> None:
        if self.core is not None:
            self.core.stop()
            self.core = None

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._teardown()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._teardown()
        return TransitionCallbackReturn.SUCCESS


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="VLA policy node, managed lifecycle (see the module docstring)")
    ap.add_argument("--autostart", action="store_true", help="configure and activate at once")
    ap.add_argument("--name", default=NODE_NAME)
    args, ros_args = ap.parse_known_args(argv)
    # Our own handlers: rclpy's would shut the context down under the running control loop; this way
    # SIGINT / SIGTERM stop the loop first (the arm keeps its last, safe command), then ROS.
    rclpy.init(args=ros_args, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # inherited ignored from a background job: see init_ros
    signal.signal(signal.SIGTERM, _interrupt)
    node = LifecyclePolicyNode(args.name)
    if args.autostart and node.trigger_configure() == TransitionCallbackReturn.SUCCESS:
        node.trigger_activate()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok():  # short waits, so that a signal's handler runs promptly
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        node._teardown()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
