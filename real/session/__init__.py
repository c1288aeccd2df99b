"""Correction sessions (`vla session`): a supervisor watches the policy and takes over when needed.

The policy (torch checkpoint or ONNX folder, `n_action_steps` of each chunk) runs the sim task in
this process; every step the supervisor, an `Intervener` (a person behind `real.teleop`'s
devices, or the scripted `sim.intervener.ExpertIntervener`), may take control. Whole episodes go
to the EpisodeStore (this process is its single writer) with per-step is_intervention /
is_recovery / policy_version; source "intervention" if anyone took over, else "rollout".

Why the loop is safe to stop at any moment: an episode lives in memory until it is complete and
is then appended in one commit, with Ctrl-C deferred until the commit is done; so quitting or
interrupting drops the episode in progress and never tears the store. Seeds continue from the
highest seed of this task's rollout / intervention episodes already in the store, so running the
same command again resumes the sequence (a dropped episode's seed is tried again).
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use (PEP 562): `vla --help` imports this package to register the command, and
# must not pay for the simulator, the experts and the policy stack.
_EXPORTS = {
    "register": "cli",
    **dict.fromkeys(("EpisodeRecord", "StepStatus", "deferred_interrupt", "mode_label", "run_supervised_episode"),
                    "episode"),
    **dict.fromkeys(("HUMAN_MODES", "HumanIntervener"), "human"),
    **dict.fromkeys(("DEVICES", "MODES", "SessionConfig", "SessionResult", "make_device", "make_intervener",
                     "next_seed", "open_store", "run_session"), "runner"),
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'real.session' has no attribute '{name}'")
    return getattr(importlib.import_module(f"real.session.{_EXPORTS[name]}"), name)
