"""`vla refine dsrl` in the refinement loop on a real environment (native pick_place, state mode): the
rounds' decisions logged by the evaluation workers, an actor trained per version on all of them, the
versions evaluated as steered policies, resume; and the plug-in's one-line errors."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from vla.config import ConfigError, load_config
from vla.data.store import EpisodeStore
from vla.refine.config import RefineConfig
from vla.refine.dsrl import load_actor
from vla.refine.loop import RefineRun
from vla.refine.methods.dsrl import read_decisions

SMALL = '{hidden: 16, utd: 2, batch_size: 8}'


def config(tmp_path: Path, pretrained: tuple[Path, Path], *overrides: str) -> RefineConfig:
    ckpt, demos = pretrained
    return load_config(RefineConfig, "refine", "debug", [f"method_args={SMALL}", *overrides],
                       values={"method": "dsrl", "ckpt": str(ckpt), "demos": str(demos),
                               "out_dir": str(tmp_path / "dsrl"), "horizon": 40, "episodes_per_iteration": 2,
                               "iterations": 2})


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_rounds_log_decisions_train_actors_and_resume(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    cfg = config(tmp_path, pretrained)
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    out = Path(cfg.out_dir)
    assert [r["version"] for r in rows] == [0, 1, 2] and [r["env_episodes"] for r in rows] == [0, 2, 4]
    assert run.version_policy(0) == str(pretrained[0])
    assert run.version_policy(2).startswith("dsrl:") and "mode=mean" in run.version_policy(2)
    logged = {k: read_decisions(out / f"iter_{k:02d}" / "dsrl" / "decisions") for k in (0, 1)}
    store = EpisodeStore.open(out / "store.zarr")
    table = store.table()
    state_dim = store.schema.state_dim
    total = 0
    for k, eps in logged.items():
        assert [s for s, *_ in eps] == run.collect_seeds(k)  # every rollout of the round, by seed
        for seed, feats, w, ok in eps:
            i = int(np.flatnonzero(table.seed == seed)[0])
            assert table.source[i] == "rollout" and bool(table.success[i]) == ok
            assert feats.shape[1] == state_dim and w.shape == (len(feats), 7)  # shared: one action-sized noise
            assert len(feats) >= 40 // 8 and np.all(np.abs(w) <= 1.5)
            total += len(feats) if k <= 1 else 0
        # version k + 1's actor saw rounds 0..k
        info = json.loads((out / f"iter_{k + 1:02d}" / "train_info.json").read_text())
        seen = sum(len(f) for j in range(k + 1) for _, f, _, _ in logged[j])
        assert info["decisions"] == seen and info["updates"] == 2 * seen and np.isfinite(info["final_q"])
    actor = load_actor(out / "iter_02" / "dsrl" / "actor.safetensors")
    assert actor.noise_dim == 7 and actor.obs_dim == state_dim and actor.cfg.hidden == 16
    # round 0 drew the base's own noise, round 1 the version-1 actor's samples: different noise
    assert not np.allclose(logged[0][0][2][0], logged[1][0][2][0])
    # version 1 and 2 were evaluated as steered policies on the evaluation seeds
    assert (out / "iter_02" / "eval" / "summary.json").exists()
    before = os.path.getmtime(out / "iter_02" / "dsrl" / "actor.safetensors")
    assert [r["version"] for r in RefineRun(cfg, progress=False).run()] == [0, 1, 2]  # resume: nothing redone
    assert os.path.getmtime(out / "iter_02" / "dsrl" / "actor.safetensors") == before


def test_method_args_and_setting_errors(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'utdd'.*utd"):
        RefineRun(config(tmp_path, pretrained, "method_args={utdd: 2}"), progress=False)
    with pytest.raises(ValueError, match="steer must be one of"):
        RefineRun(config(tmp_path, pretrained, "method_args={steer: half}"), progress=False)
    with pytest.raises(ValueError, match="outcomes alone"):
        RefineRun(config(tmp_path, pretrained, "intervener=rac"), progress=False)


def test_read_decisions_names_a_foreign_file(tmp_path: Path) -> None:
    np.savez(tmp_path / "3.npz", features=np.zeros((2, 4)), noise=np.zeros((2, 7)), success=np.asarray(True))
    np.savez(tmp_path / "12.npz", features=np.ones((1, 4)), noise=np.ones((1, 7)), success=np.asarray(False))
    assert [(s, len(f), ok) for s, f, _, ok in read_decisions(tmp_path)] == [(3, 2, True), (12, 1, False)]
    np.savez(tmp_path / "20.npz", action=np.zeros(3))
    with pytest.raises(ValueError, match=r"20\.npz: not a DSRL decision log"):
        read_decisions(tmp_path)
    assert read_decisions(tmp_path / "missing") == []
