"""vla/evaluation.py: the execution settings an evaluation, a refinement run and a session share, written once."""

from dataclasses import fields

import pytest

from vla.evaluation import ChunkSettings, EnvSettings, Execution, settings
from vla.refine.config import RefineConfig


def test_a_run_hands_the_evaluator_exactly_the_shared_settings() -> None:
    cfg = RefineConfig(n_action_steps=4, temporal_ensemble=0.3, cameras=[], obs_mode="state", workers=1)
    kw = settings(cfg)
    assert set(kw) == {f.name for f in fields(Execution)} and len(kw) == 17
    assert (kw["n_action_steps"], kw["temporal_ensemble"], kw["obs_mode"], kw["perturb"]) == (4, 0.3, "state", "none")
    # the simulator's poses unless an estimator is named
    assert (kw["poses"], kw["poses_smoothing"], kw["poses_rest_gate_mm"]) == ("", 1.0, 0.0)
    assert settings(cfg, ChunkSettings) == {"n_action_steps": 4, "temporal_ensemble": 0.3, "temporal_ensemble_every": 1,
                                            "runtime": "torch"}
    assert EnvSettings(obs_mode="", cameras=["agentview"], horizon=30).env_kwargs() == {
        "image_size": 84, "obs_mode": "image", "cameras": ("agentview",), "horizon": 30}


def test_the_checks_are_the_same_everywhere() -> None:
    for bad, match in (({"n_action_steps": 0}, "n_action_steps must be >= 1"),
                       ({"temporal_ensemble": float("inf")}, "temporal_ensemble must be a finite rate"),
                       ({"temporal_ensemble_every": 0}, "temporal_ensemble_every must be an integer"),
                       ({"backend": "rayy"}, r"unknown backend 'rayy'.*ray"),
                       ({"runtime": "onx"}, r"unknown runtime 'onx'.*onnx"),
                       ({"obs_mode": "pixels"}, "unknown obs_mode 'pixels'"),
                       ({"perturb": "realistc"}, "unknown perturbation or preset 'realistc'.*did you mean 'realistic'"),
                       ({"randomize": "realistc"}, "unknown perturbation or preset 'realistc'"),
                       ({"perturb": "blur:1", "randomize": "realistic"}, "perturb .* and randomize .* are both set"),
                       ({"poses_smoothing": 0.0}, r"poses_smoothing must be in \(0, 1\]"),
                       ({"workers": 0}, "workers must be >= 1")):
        with pytest.raises(ValueError, match=match):
            Execution(**bad).check_execution()
