"""The oracle of imagination refinement: start states reached again in the simulator by replaying
the recorded actions, the same chunk sequences executed for real, the true success recorded."""

from pathlib import Path

import numpy as np
import pytest

from vla.data.store import EpisodeStore
from worldmodel.imagined_env import StartStates
from worldmodel.oracle import simulate

pytestmark = pytest.mark.slow


class Replay:
    """A batch policy that plays back one recorded episode's actions from a given step."""

    def __init__(self, actions: np.ndarray, start: int, chunk: int) -> None:
        self.actions, self.t, self.chunk = actions, start, chunk

    def reset(self, seed: int | None = None) -> None:
        pass

    def sample_chunk(self, obs_batch: list, prefix: object = None, guidance: object = None) -> np.ndarray:
        part = self.actions[self.t:self.t + self.chunk]
        part = np.concatenate([part, np.repeat(part[-1:], self.chunk - len(part), 0)]) if len(part) else \
            np.zeros((self.chunk, self.actions.shape[1]), np.float32)
        self.t += self.chunk
        return np.repeat(part[None], len(obs_batch), 0)


def starts_at(store: Path, episode: int, step: int) -> StartStates:
    with EpisodeStore.open(store) as s:
        start = int(s.table().episode_starts[episode])
        state = s.read("state", start + step, start + step + 1)
        success = bool(s.table().success[episode])
    return StartStates(state.astype(np.float32), None, ["pick"], np.array([episode]), np.array([step]),
                       np.array([success]))


def test_replayed_starts_match_and_the_recorded_ending_succeeds_for_real(pick_place_store: Path) -> None:
    with EpisodeStore.open(pick_place_store) as s:
        table = s.table()
        e = int(np.flatnonzero(table.success)[0])  # an expert success
        start, end = s.episode_bounds(e)
        actions = s.read("action", start, end)
    n = end - start
    k0 = 16
    chunks = int(np.ceil((n - k0) / 8)) + 1
    res = simulate("pick_place", pick_place_store, starts_at(pick_place_store, e, k0), 2, chunks, 8,
                   Replay(actions, k0, 8))
    assert res["replay_error"][0] < 1e-5  # the simulator is back at the recorded state
    assert res["success"].all() and (res["lengths"] <= n - k0).all()
    hit = int(np.argmax(res["success_prob"][0] >= 0.5))
    assert (res["success_prob"][0, hit:] == 1).all() and (res["success_prob"][0, :hit] == 0).all()
    with EpisodeStore.open(pick_place_store) as s:
        recorded = s.read("state", start + k0, start + k0 + int(res["lengths"][0]))
    assert np.allclose(res["step_states"][0, : len(recorded)], recorded, atol=1e-5)
    assert np.array_equal(res["states"][:, 0], np.repeat(res["step_states"][:1, 0], 2, 0))


class Counting:
    """Counts the chunks a policy was asked for."""

    def __init__(self, policy: Replay) -> None:
        self.policy, self.calls = policy, 0

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def sample_chunk(self, obs_batch: list, prefix: object = None, guidance: object = None) -> np.ndarray:
        self.calls += 1
        return self.policy.sample_chunk(obs_batch)


def test_a_continuation_plays_after_the_sampled_chunks(pick_place_store: Path) -> None:
    with EpisodeStore.open(pick_place_store) as s:
        e = int(np.flatnonzero(s.table().success)[0])
        start, end = s.episode_bounds(e)
        actions = s.read("action", start, end)
    k0, n_chunks = 16, int(np.ceil((end - start - 16) / 8)) + 1
    first, after = Counting(Replay(actions, k0, 8)), Counting(Replay(actions, k0 + 8, 8))
    res = simulate("pick_place", pick_place_store, starts_at(pick_place_store, e, k0), 2, n_chunks, 8, first,
                   continuation=after, sampled_chunks=1)
    # the sampled chunk, then the recorded ending from the continuation: the episode ends as recorded
    assert first.calls == 1 and after.calls >= 1 and res["success"].all()
    with EpisodeStore.open(pick_place_store) as s:
        recorded = s.read("state", start + k0, start + k0 + int(res["lengths"][0]))
    assert np.allclose(res["step_states"][0, : len(recorded)], recorded, atol=1e-5)
    # a continuation that does not carry the episode on (the first chunk again and again) does not succeed
    stuck = Counting(Replay(np.repeat(actions[k0:k0 + 1], 8, 0), 0, 8))
    res = simulate("pick_place", pick_place_store, starts_at(pick_place_store, e, k0), 1, 4, 8,
                   Counting(Replay(actions, k0, 8)), continuation=stuck, sampled_chunks=1)
    assert stuck.calls == 3 and not res["success"].any()


def test_an_oracle_iteration_in_the_loop(tmp_path: Path, pick_place_store: Path) -> None:
    from tests.worldmodel.test_evaluate_rank import tiny_policy
    from tests.worldmodel.test_imagination_refine import config
    from vla.refine.loop import RefineRun

    policy = tiny_policy(tmp_path, pick_place_store, 0)
    cfg = config(tmp_path, policy, pick_place_store)
    # a chunk judged by its value under the policy as it deploys, every supervised window at its natural share
    # (and, as the control writes them, the deployed chunk in each chosen sample's place)
    cfg.method_args.update(oracle=True, oracle_continuation="deployed", baseline="deployed", demo_share=None,
                           supervise="deployed", first_window_only=True)
    run = RefineRun(cfg, progress=False)
    run.run()
    added = run.added(0)
    info = added.info
    assert info["oracle"] and info["replay_error_max"] < 1e-4 and info["rollouts"] == 12
    assert info["oracle_continuation"] == "deployed" and info["demo_share"] is None and info["supervise"] == "deployed"
    assert info["first_window_only"] and added.first_window_only
    assert info["simulated_steps"] > 0 and len(added.episodes) == len(added.weights)
    with pytest.raises(ValueError, match="oracle_chunks is the oracle's look-ahead"):
        cfg3 = config(tmp_path / "c", policy, pick_place_store)
        cfg3.method_args.update(oracle_chunks=10)
        cfg3.validate()
    with pytest.raises(ValueError, match="oracle_continuation=deployed is the oracle's"):
        cfg4 = config(tmp_path / "d", policy, pick_place_store)
        cfg4.method_args.update(oracle_continuation="deployed")
        cfg4.validate()
    with pytest.raises(ValueError, match="oracle_continuation must be 'sampled' or 'deployed', got 'greedy'"):
        cfg5 = config(tmp_path / "e", policy, pick_place_store)
        cfg5.method_args.update(oracle=True, oracle_continuation="greedy")
        cfg5.validate()
    with pytest.raises(ValueError, match="supervise=deployed writes the deployed chunk's rollout"):
        cfg6 = config(tmp_path / "f", policy, pick_place_store)
        cfg6.method_args.update(oracle=True, supervise="deployed", baseline="group")
        cfg6.validate()
    with pytest.raises(ValueError, match=r"oracle=true .* needs imagine=true"):
        cfg2 = config(tmp_path / "b", policy, pick_place_store)
        cfg2.method_args.update(oracle=True, imagine=False, real_weight=1.0)
        cfg2.validate()
