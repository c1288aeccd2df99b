# Training image: CUDA torch, the stack with the sim extra, OSMesa for offscreen MuJoCo rendering.
# Build: docker build -f docker/train.Dockerfile -t vla-stack:train .
# Run:   docker run --gpus all -v $PWD/runs:/app/runs vla-stack:train vla run
FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 MUJOCO_GL=egl HF_HUB_OFFLINE=1
RUN apt-get update && apt-get install -y --no-install-recommends \
        python3.12 python3.12-venv python3-pip libegl1 libosmesa6 libgl1 ffmpeg git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY vla vla
COPY sim sim
COPY real real
COPY worldmodel worldmodel
COPY configs configs
RUN python3.12 -m venv /opt/venv && /opt/venv/bin/pip install --upgrade pip \
    && /opt/venv/bin/pip install torch && /opt/venv/bin/pip install -e ".[sim,gpu]"
ENV PATH=/opt/venv/bin:$PATH
CMD ["vla", "--help"]
