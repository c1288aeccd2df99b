"""Typed configs: presets, overrides, unknown keys/presets with suggestions, type errors."""

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vla.config import ConfigError, load_config, preset_names


@dataclass
class Inner:
    lr: float = 1e-3
    steps: int = 10


@dataclass
class Outer:
    name: str = "x"
    tags: list[str] = field(default_factory=list)
    inner: Inner = field(default_factory=Inner)


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    (tmp_path / "thing").mkdir()
    (tmp_path / "thing" / "fast.yaml").write_text("inner:\n  steps: 3\ntags: [a, b]\n")
    (tmp_path / "thing" / "typo.yaml").write_text("inner:\n  stpes: 3\n")
    return tmp_path


def test_defaults_preset_overrides_in_order(config_dir: Path) -> None:
    assert load_config(Outer, "thing", config_dir=config_dir) == Outer()
    cfg = load_config(Outer, "thing", "fast", ["inner.lr=0.5", "name=y"], config_dir=config_dir)
    assert cfg == Outer(name="y", tags=["a", "b"], inner=Inner(lr=0.5, steps=3))
    assert isinstance(cfg.inner, Inner)
    assert preset_names("thing", config_dir) == ["fast", "typo"]


def test_errors_name_the_key_and_suggest(config_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'inner.stpes'.*did you mean 'inner.steps'"):
        load_config(Outer, "thing", "typo", config_dir=config_dir)
    with pytest.raises(ConfigError, match=r"unknown thing preset 'fsat'.*did you mean 'fast'"):
        load_config(Outer, "thing", "fsat", config_dir=config_dir)
    with pytest.raises(ConfigError, match=r"unknown key 'nmae'.*did you mean 'name'"):
        load_config(Outer, "thing", overrides=["nmae=z"], config_dir=config_dir)
    with pytest.raises(ConfigError, match=r"key 'inner.steps'"):
        load_config(Outer, "thing", overrides=["inner.steps=many"], config_dir=config_dir)
    with pytest.raises(ConfigError, match="key=value"):
        load_config(Outer, "thing", overrides=["inner.steps"], config_dir=config_dir)


def test_shipped_job_presets_load() -> None:
    from vla.job import JobConfig

    for name in preset_names("job"):
        cfg = load_config(JobConfig, "job", name)
        assert cfg.stages
    with pytest.raises(ConfigError, match=r"key 'stages': unknown stage 'stast'.*did you mean 'stats'"):
        load_config(JobConfig, "job", "debug", ["stages=[demos,stast]"])
    # a nested list (YAML's "- - x", found by the hostile-input suite) names the key, not "['x']"
    with pytest.raises(ConfigError, match=r"key 'stages': each entry must be a stage name, got \['x'\]"):
        load_config(JobConfig, "job", "debug", ["stages=- - x"])
    # the default job checks its ONNX export on the first 50 of its 200 evaluation seeds
    cfg = load_config(JobConfig, "job", "default")
    assert (cfg.eval.episodes, cfg.eval.onnx_episodes, cfg.refine.eval_episodes) == (200, 20, 200)
    assert cfg.eval.runtime == "onnx" and cfg.perception.randomize.endswith("action_noise:0.02")
    with pytest.raises(ConfigError, match=r"eval\.onnx_episodes must be >= 0 .*got -1"):
        load_config(JobConfig, "job", "default", ["eval.onnx_episodes=-1"])
    with pytest.raises(ConfigError, match=r"eval\.runtime must be one of torch, onnx, got 'onx'.*'onnx'"):
        load_config(JobConfig, "job", "default", ["eval.runtime=onx"])
    with pytest.raises(ConfigError, match=r"demos\.obs_mode must be image or state, got 'pixels'"):
        load_config(JobConfig, "job", "default", ["demos.obs_mode=pixels"])
    # the robustness stage's perturbation is checked at load, by name, with the close match
    with pytest.raises(ConfigError, match=r"robustness\.perturb: .*unknown perturbation or preset 'realistc'.*"
                                          r"did you mean 'realistic'"):
        load_config(JobConfig, "job", "default", ["robustness.perturb=realistc"])
    with pytest.raises(ConfigError, match=r"demos\.randomize: .*'camera_shfit'.*did you mean 'camera_shift'"):
        load_config(JobConfig, "job", "default", ["demos.randomize=camera_shfit:10"])
    with pytest.raises(ConfigError, match=r"demos\.perturb \(blur:1\) and demos\.randomize \(realistic\) are both set"):
        load_config(JobConfig, "job", "default", ["demos.perturb=blur:1", "demos.randomize=realistic"])
    with pytest.raises(ConfigError, match=r"robustness\.policy=refined needs the refine stage before robustness"):
        load_config(JobConfig, "job", "default", ["stages=[sim_demos,pretrain,robustness]"])
    # extending a finished job (overwrite=false): its refine stage is in the folder's results, as for deploy
    cfg = load_config(JobConfig, "job", "default", ["stages=[robustness,perception,deploy]", "overwrite=false"])
    assert cfg.stages == ["robustness", "perception", "deploy"]
