"""Real-robot deployment: chunk executor (`executor`, `chunk_queue`, `worker`), safety layer
(`safety`), deployment config (`config`), ROS 2 nodes (`ros`, needs the `ros` extra) and test
stand-ins (`testing`). Nothing outside `real.ros` imports ROS."""
