"""backend=ray: a real local Ray cluster on 127.0.0.1 (no dashboard, no usage stats) runs the same
episodes as the local worker processes."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sim.evaluate import EvalConfig, run_evaluation
from vla.data.store import EpisodeStore

needs_ray = pytest.mark.skipif(find_spec("ray") is None,
                               reason="Ray is not installed (the dist extra: pip install -e '.[dist]')")


# A token of our own: Ray would otherwise generate one into ~/.ray/auth_token.
TEST_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
OFFHOST = Path(__file__).parents[2] / "tools" / "offhost-traffic"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """ray.init(address="local", include_dashboard=False, num_cpus=2, _node_ip_address="127.0.0.1")
    and what keeps it on loopback (sim.ray_backend.start_local_cluster)."""
    import ray

    from sim.ray_backend import start_local_cluster

    saved = {k: os.environ.get(k) for k in TEST_ENV}
    os.environ.update(TEST_ENV)
    start_local_cluster(num_cpus=2, object_store_memory=256 * 2**20)
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    try:
        yield
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _episodes(path: Path) -> list[dict[str, Any]]:
    store = EpisodeStore.open(path)
    try:
        table = store.table()
        return [{"seed": int(table.seed[i]), "success": bool(table.success[i]), "source": table.source[i],
                 **{k: v for k, v in store.episode(i).steps.items() if k != "timestamp"}}
                for i in range(store.n_episodes)]
    finally:
        store.close()


def _assert_same_episodes(a: Path, b: Path) -> None:
    ea, eb = _episodes(a), _episodes(b)
    assert [e["seed"] for e in ea] == [e["seed"] for e in eb]
    for x, y in zip(ea, eb, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            if isinstance(x[k], np.ndarray):
                np.testing.assert_array_equal(x[k], y[k], err_msg=f"seed {x['seed']}: {k}")
            else:
                assert x[k] == y[k], f"seed {x['seed']}: {k}"


@needs_ray
@pytest.mark.slow
def test_same_seeds_give_the_same_episodes_as_the_local_backend(tmp_path: Path, ray_cluster: None) -> None:
    # A noisy, hesitant expert: the episodes depend on the seeded noise, so a seed that reached a
    # different noise stream on Ray would show. Ray runs them on 1 worker, local on 2.
    common = {"task": "pick_place", "policy": "expert", "episodes": 4, "seed_range": "collect", "seed_offset": 7,
              "noise": 0.3,
              "skill": 0.6, "obs_mode": "state", "cameras": [], "videos": 0, "source": "demo"}
    local = run_evaluation(EvalConfig(**common, workers=2, out_dir=str(tmp_path / "local"),
                                      record=str(tmp_path / "local.zarr")), progress=False)
    on_ray = run_evaluation(EvalConfig(**common, workers=1, backend="ray", out_dir=str(tmp_path / "ray"),
                                       record=str(tmp_path / "ray.zarr")), progress=False)
    _assert_same_episodes(tmp_path / "local.zarr", tmp_path / "ray.zarr")
    assert on_ray["seeds"] == local["seeds"] == [7, 8, 9, 10]
    for k in ("successes", "length_mean", "subtask_success"):
        assert on_ray[k] == local[k]


@needs_ray
@pytest.mark.slow
def test_refinement_rollouts_of_a_checkpoint_with_an_intervener(tmp_path: Path, ray_cluster: None,
                                                                 tiny_ckpt: Path) -> None:
    # What the refinement loop's collection asks for: a checkpoint (its files shipped to the task),
    # the scripted intervener, images, recorded episodes, and a video back in the parent's out_dir.
    common = {"task": "pick_place", "policy": str(tiny_ckpt), "episodes": 2, "seed_range": "collect",
              "seed_offset": 3, "horizon": 40,
              "n_action_steps": 4, "cameras": ["agentview"], "intervener": "hg_dagger", "policy_version": 2,
              "videos": 1, "intervener_args": {"subtask_timeout": 10}}
    run_evaluation(EvalConfig(**common, workers=2, out_dir=str(tmp_path / "local"),
                              record=str(tmp_path / "local.zarr")), progress=False)
    summary = run_evaluation(EvalConfig(**common, workers=2, backend="ray", out_dir=str(tmp_path / "ray"),
                                        record=str(tmp_path / "ray.zarr")), progress=False)
    _assert_same_episodes(tmp_path / "local.zarr", tmp_path / "ray.zarr")
    episodes = _episodes(tmp_path / "ray.zarr")
    assert episodes[0]["images/agentview"].shape[1:] == (84, 84, 3)
    assert all((e["policy_version"] == 2).all() for e in episodes)
    assert summary["intervention_steps"] > 0  # the intervener took over: its steps match too
    video = Path(summary["episodes_detail"][0]["video"])
    assert video == tmp_path / "ray" / "videos" / "pick_place_seed3.mp4" and video.stat().st_size > 1000


OFFHOST_RUN = """
from sim.evaluate import EvalConfig, run_evaluation
s = run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=2, workers=2, backend="ray",
                              obs_mode="state", cameras=[], videos=0, out_dir={out!r}), progress=False)
assert s["successes"] == 2, s
"""


@needs_ray
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="tools/offhost-traffic needs strace")
def test_a_private_cluster_sends_nothing_off_the_machine(tmp_path: Path) -> None:
    # The whole run under strace: the driver starting its own cluster (backend=ray, no address),
    # Ray's daemons and the worker processes; any destination outside loopback fails it.
    env = {**os.environ, **TEST_ENV}
    run = subprocess.run([str(OFFHOST), sys.executable, "-c", OFFHOST_RUN.format(out=str(tmp_path))], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]


def test_an_unknown_backend_is_refused_before_any_worker_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown backend 'rayy'.*ray"):
        run_evaluation(EvalConfig(backend="rayy", out_dir=str(tmp_path)), progress=False)


def test_the_refinement_loop_hands_its_backend_to_the_evaluator(tmp_path: Path) -> None:
    from vla.refine.config import RefineConfig
    from vla.refine.loop import RefineRun

    run = RefineRun(RefineConfig(method="sft", ckpt=str(tmp_path), demos=str(tmp_path), out_dir=str(tmp_path),
                                 backend="ray", ray_address="10.0.0.1:6379"))
    kwargs = run._eval_kwargs()
    config = EvalConfig(**kwargs)  # every key is an evaluator key
    assert (config.backend, config.ray_address) == ("ray", "10.0.0.1:6379")


@needs_ray
def test_a_failing_task_fails_the_evaluation_with_the_workers_error(tmp_path: Path, ray_cluster: None) -> None:
    # A camera the task lacks is found only where the env is made: inside the Ray task.
    with pytest.raises(RuntimeError, match=r"(?s)evaluation worker 0 failed on Ray.*unknown camera 'nope'"):
        run_evaluation(EvalConfig(task="pick_place", policy="zero", episodes=1, workers=1, cameras=["nope"],
                                  videos=0, backend="ray", out_dir=str(tmp_path)), progress=False)
