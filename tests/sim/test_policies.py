"""sim/policies.py: the native expert's options, from a config's expert_* keys to the expert."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from sim.evaluate import EvalConfig
from sim.policies import expert_options, load_policy
from vla.registry import TASKS


def test_expert_options_are_the_keys_a_config_sets() -> None:
    assert expert_options(asdict(EvalConfig(task="pick_place", policy="expert"))) == {}
    cfg = EvalConfig(task="pick_place", policy="expert", expert_rot_speed=0.3, expert_turn_late=True)
    assert expert_options(asdict(cfg)) == {"rot_speed": 0.3, "turn_late": True}


def test_load_policy_hands_the_options_to_the_native_expert() -> None:
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    try:
        expert = load_policy("expert", env, expert_options={"rot_speed": 0.3, "turn_late": True}).expert
        assert (expert.rot_speed, expert.turn_late, expert.drop) == (0.3, True, 0.0)
        assert load_policy("expert", env).expert.turn_late is False
        with pytest.raises(ValueError, match="rot_speed must be in"):
            load_policy("expert", env, expert_options={"rot_speed": 2.0})
    finally:
        env.close()
