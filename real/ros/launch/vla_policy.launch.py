"""Launch the managed VLA policy node (real/ros/lifecycle_node.py) on a system ROS 2 install.

`launch` is not on PyPI, so this file is for a sourced ROS 2 (Humble, Jazzy, Kilted) with this
project installed in the Python that ROS uses (or in a venv made with --system-site-packages):

  python -m real.ros.params configs/deploy/native_arm.yaml > /tmp/vla.params.yaml
  ros2 launch real/ros/launch/vla_policy.launch.py params_file:=/tmp/vla.params.yaml
  ros2 lifecycle get /vla_policy          # active (autostart:=false leaves it unconfigured)
  ros2 param get /vla_policy executor.mode
  ros2 lifecycle set /vla_policy deactivate   # the arm holds

The pip-wheel path needs no launch: `python -m real.ros.lifecycle_node --autostart --ros-args
--params-file /tmp/vla.params.yaml` is the command this file runs.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration


def generate_launch_description() -> LaunchDescription:
    python = LaunchConfiguration("python")
    params = LaunchConfiguration("params_file")
    node = [python, "-m", "real.ros.lifecycle_node", "--name", LaunchConfiguration("name")]
    ros_args = ["--ros-args", "--params-file", params]
    return LaunchDescription([
        DeclareLaunchArgument("params_file", description="ROS parameters of the node: "
                              "python -m real.ros.params configs/deploy/<robot>.yaml > FILE"),
        DeclareLaunchArgument("python", default_value="python3", description="the Python with this project"),
        DeclareLaunchArgument("name", default_value="vla_policy", description="node name (the params file's key)"),
        DeclareLaunchArgument("autostart", default_value="true", description="configure and activate at once"),
        ExecuteProcess(cmd=[*node, "--autostart", *ros_args], output="screen", sigterm_timeout="10",
                       condition=IfCondition(LaunchConfiguration("autostart"))),
        ExecuteProcess(cmd=[*node, *ros_args], output="screen", sigterm_timeout="10",
                       condition=UnlessCondition(LaunchConfiguration("autostart"))),
    ])
