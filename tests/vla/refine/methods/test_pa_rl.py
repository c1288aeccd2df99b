"""PA-RL's pure parts and a tiny iteration in the real loop: a Q critic on (state, executed chunk),
K candidate chunks re-ranked for the current policy's states, the best written as one-window
episodes and distilled with the demos."""

import json
from pathlib import Path

import numpy as np
import pytest

from tests.vla.refine.test_loop import config
from vla.refine.methods.pa_rl import best_chunks, executed_chunks


def test_executed_chunks_follow_the_episode_and_repeat_its_last_action() -> None:
    action = np.arange(10, dtype=np.float32).reshape(5, 2)  # episode A: steps 0-2, episode B: steps 3-4
    nxt = np.array([1, 2, 2, 4, 4])
    out = executed_chunks(action, nxt, 3)
    assert out[0].tolist() == [[0, 1], [2, 3], [4, 5]]
    assert out[1].tolist() == [[2, 3], [4, 5], [4, 5]]  # the episode ends: its last action repeats
    assert out[3].tolist() == [[6, 7], [8, 9], [8, 9]]  # never crosses into another episode


def test_best_chunk_per_state() -> None:
    assert best_chunks(np.array([0.1, 0.9, 0.5, 0.7, 0.2, 0.3]), 3).tolist() == [1, 0]


@pytest.mark.slow
def test_a_pa_rl_iteration_reranks_writes_and_distils(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    from vla.data.store import EpisodeStore
    from vla.refine.loop import RefineRun

    cfg = config(tmp_path, pretrained, "pa_rl", "intervener_args={subtask_timeout: 8}",
                 "method_args={samples: 3, states: 5, chunk: 4}")
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    added = run.added(0)
    info = added.info
    assert info["states"] == 5 and len(added.episodes) == 5 and added.first_window_only
    assert info["chosen_q_mean"] >= info["candidate_q_mean"]  # the best of K is at least their mean
    assert rows[1]["added_episodes"] == 5
    with EpisodeStore.open(run.store_path) as store:
        table = store.table()
        for e in added.episodes:
            # never executed: proposed, with the seed of the rollout its state came from
            assert table.source[e] == "proposed" and table.seed[e] in run.collect_seeds(0)
            s, end = store.episode_bounds(e)
            states = store.read("state", s, end)
            assert (states == states[0]).all() and end - s == 16  # one state, one chunk of the policy
    train = json.loads((run.out / "iter_01" / "train_info.json").read_text())
    assert train["pa_rl_windows"] == 5 and rows[1]["env_episodes"] == 2
    with pytest.raises(ValueError, match="samples must be >= 2"):
        config(tmp_path / "b", pretrained, "pa_rl", "method_args={samples: 1}").validate()
