"""Object poses from camera images: the pose estimator a deployed state policy reads instead of the
simulator's ground truth (`vla perception train STORE`, `vla perception eval`, real/ros/pose_node.py)."""
