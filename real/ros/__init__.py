"""ROS 2 nodes of the deployment path. Importing `real.ros.policy_node` needs rclpy (the `ros` extra)."""

# The policy node's ~/pause reply when a resume finds the paused episode's inference still running: the node holds
# the arm and cannot abandon the thread, so a supervisor (real/stages.py, run_deploy) restarts it. One definition
# for the node that says it and the supervisor that reads it (a service reply carries only a message).
INFERENCE_HANGS = "an inference still runs"
