"""Fixtures of the ROS 2 tests."""

from __future__ import annotations

import os
import random

import pytest


@pytest.fixture
def domain_id(monkeypatch) -> int:
    """A fresh ROS domain for the test and its child processes, discovery on this machine only. Under
    pytest-xdist each worker draws from its own range, so tests running side by side never share one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    base = 100 * (int(worker[2:]) % 2) if worker[2:].isdigit() else 0
    d = random.SystemRandom().randint(base + 1, base + 100)
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(d))
    return d
