"""The robosuite tasks' names, instructions and cameras, without importing robosuite: `sim.tasks`
registers these names at import and imports robosuite (sim/tasks/robosuite_tasks.py) only when one of
them is made, so a command on a native task neither pays for robosuite nor prints its warnings."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_TABLE_CAMERAS = ("agentview", "robot0_eye_in_hand", "frontview", "birdview", "sideview", "robot0_robotview")
_BINS_CAMERAS = ("agentview", "robot0_eye_in_hand", "frontview", "birdview", "robot0_robotview")


@dataclass(frozen=True)
class TaskSpec:
    env_name: str
    instructions: tuple[str, ...]
    cameras: tuple[str, ...]
    env_kwargs: dict[str, Any] = field(default_factory=dict)


SPECS: dict[str, TaskSpec] = {
    "lift": TaskSpec("Lift", (
        "lift the red cube",
        "pick up the cube",
        "grasp the red block and raise it",
        "lift the block off the table",
    ), _TABLE_CAMERAS),
    "can": TaskSpec("PickPlaceCan", (
        "put the can in the bin",
        "pick up the can and place it in its bin",
        "move the soda can to the target bin",
        "place the can into the right compartment",
    ), _BINS_CAMERAS),
    "square": TaskSpec("NutAssemblySquare", (
        "put the square nut on the peg",
        "fit the square nut onto the square peg",
        "pick up the nut by its handle and slide it over the peg",
        "assemble the square nut on its peg",
    ), _TABLE_CAMERAS),
}


# What robosuite prints on every import: its macro-file advice (macros.py) and one line per optional extra
# it cannot import (robosuite_models, mink IK); none concerns the three tasks here. VLA_VERBOSE=1 (`vla
# --verbose`) lets them through.
@contextlib.contextmanager
def quiet_robosuite_import() -> Iterator[None]:
    if os.environ.get("VLA_VERBOSE") == "1":
        yield
        return
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)
        logging.getLogger("robosuite_logs").setLevel(logging.ERROR)
