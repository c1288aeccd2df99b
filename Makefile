# Two commands on a fresh machine: `make run` (the main job) and `make test` (the test suite).
# Each creates .venv and installs what it needs. Without a GPU, torch is pinned to the CPU build
# (torch==2.13.0) so that no CUDA wheels are ever downloaded; with one, the ordinary CUDA torch.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HAS_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo 1)
CONSTRAINTS := $(if $(HAS_GPU),,-c constraints/cpu.txt)
EXTRAS ?= dev,sim,ros,dist
PYTEST_ARGS ?=
export MUJOCO_GL ?= osmesa
export PYOPENGL_PLATFORM ?= osmesa
export HF_HUB_OFFLINE := 1
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST

.PHONY: install system-deps test-deps run test lint bench clean

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
	$(if $(HAS_GPU),$(PY) -m pip install -q torch,$(PY) -m pip install -q torch==2.13.0)
	$(PY) -m pip install -q $(CONSTRAINTS) -e ".[$(EXTRAS)]"
	# robosuite without its numpy<2 pin (mink==0.0.5); its real dependencies are in the sim extra.
	$(PY) -m pip install -q --no-deps robosuite==1.5.2
	# Meta-World (mw_* tasks) without its mujoco==3.3.0 pin: it runs with the project's mujoco 3.3.x;
	# imageio, its one missing import, is in the sim extra.
	$(PY) -m pip install -q --no-deps metaworld==3.1.1
	touch $@

install: system-deps $(VENV)/.installed

run: install
	$(VENV)/bin/vla run

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
