# Two commands on a fresh machine: `make run` (the main job) and `make test` (the test suite).
# Each creates .venv and installs what it needs. Without a GPU, torch is pinned to the CPU build
# (torch==2.13.0) so that no CUDA wheels are ever downloaded: a local CPU wheel when pip's wheel
# folders have one, else PyTorch's CPU wheel index (tools/torch-source; TORCH_INDEX_URL overrides).
# With a GPU: the ordinary CUDA torch and the `gpu` extra (ONNX Runtime's CUDA build).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HAS_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo 1)
CONSTRAINTS := $(if $(HAS_GPU),,-c constraints/cpu.txt)
TORCH_VERSION := 2.13.0
comma := ,
EXTRAS ?= dev,sim,ros,dist$(if $(HAS_GPU),$(comma)gpu)
PYTEST_ARGS ?=
export MUJOCO_GL ?= osmesa
export PYOPENGL_PLATFORM ?= osmesa
export HF_HUB_OFFLINE := 1
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST

.PHONY: install system-deps test-deps run run-robust test lint bench clean

# System packages (libosmesa6; libegl1 with a GPU): installed with apt-get as root or with
# passwordless sudo, otherwise one line says what to run. Checked on every install (cheap).
system-deps:
	@tools/system-deps

# What only the tests need (chromium, for the job report's headless-browser checks), the same way.
test-deps:
	@tools/system-deps --test

$(VENV)/.installed: pyproject.toml constraints/cpu.txt | system-deps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(HAS_GPU),$(PY) -m pip install -q torch,$(PY) -m pip install -q torch==$(TORCH_VERSION) $$(tools/torch-source $(PY) $(TORCH_VERSION)))
	$(PY) -m pip install -q $(CONSTRAINTS) -e ".[$(EXTRAS)]"
	# onnxruntime and onnxruntime-gpu are one module: the CPU build, which the base dependencies bring,
	# would shadow the CUDA one (ONNX Runtime's install notes: uninstall it first).
	$(if $(findstring gpu,$(EXTRAS)),$(PY) -m pip uninstall -q -y onnxruntime && $(PY) -m pip install -q --force-reinstall --no-deps onnxruntime-gpu)
	# robosuite without its numpy<2 pin (mink==0.0.5); its real dependencies are in the sim extra.
	$(PY) -m pip install -q --no-deps robosuite==1.5.2
	# Meta-World (mw_* tasks) without its mujoco==3.3.0 pin: it runs with the project's mujoco 3.3.x;
	# imageio, its one missing import, is in the sim extra.
	$(PY) -m pip install -q --no-deps metaworld==3.1.1
	touch $@

install: system-deps $(VENV)/.installed

run: install
	$(VENV)/bin/vla run

# The main job on the earlier gain-0.7 demos that also randomise the action latency (the default's randomise the
# pose latency and camera pose): better than gain 0.7 alone under the `realistic` preset, worse clean, and past
# the 15-minute budget (benchmarks/results/robustness.md, block job_robust). Kept for its figures: the default's
# gain-0.4 demos lose less to the latency than this does (blocks job, job_s17)
run-robust: install
	$(VENV)/bin/vla run out_dir=runs/main_robust demos.gain=0.7 \
		demos.randomize=action_latency:1,pose_latency:2,camera_shift:10,camera_rot:1

# The learning check (tests/test_learning_check.py) runs alone after the parallel suite: ~90 s with both
# cores, against ~6 min beside another worker. Exit status 5 (PYTEST_ARGS selected no test of that half)
# is not a failure.
test: install test-deps
	$(PY) -m pytest -n 2 --durations=15 -m "not learning" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(PY) -m pytest -m learning --durations=1 $(PYTEST_ARGS) || [ $$? -eq 5 ]

lint: install
	$(VENV)/bin/ruff check .

bench: install
	$(PY) benchmarks/bench_data.py

clean:
	rm -rf $(VENV) runs .pytest_cache
