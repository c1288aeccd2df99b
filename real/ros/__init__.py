"""ROS 2 nodes of the deployment path. Importing `real.ros.policy_node` needs rclpy (the `ros` extra)."""
