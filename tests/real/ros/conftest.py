"""Fixtures of the ROS 2 tests."""

from __future__ import annotations

import random

import pytest


@pytest.fixture
def domain_id(monkeypatch) -> int:
    """A fresh ROS domain for the test and its child processes, discovery on this machine only."""
    d = random.SystemRandom().randint(1, 200)
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(d))
    return d
