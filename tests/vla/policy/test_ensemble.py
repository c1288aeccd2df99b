import numpy as np
import pytest

from vla.policy.ensemble import ChunkSchedule, TemporalEnsemble, ensemble_weights


def test_weights_favour_recent_predictions_for_a_positive_rate_and_old_ones_for_a_negative_one() -> None:
    ages = np.array([3, 2, 1, 0])
    np.testing.assert_allclose(ensemble_weights(ages, 0.0), [0.25] * 4)
    w = ensemble_weights(ages, 0.5)
    assert w.sum() == pytest.approx(1.0) and np.all(np.diff(w) > 0)  # the newest (age 0) weighs most
    np.testing.assert_allclose(w[-1] / w[-2], np.exp(0.5))
    assert np.all(np.diff(ensemble_weights(ages, -0.01)) < 0)  # ACT's: the oldest weighs most
    np.testing.assert_allclose(ensemble_weights(ages, 1e4), [0, 0, 0, 1])  # no overflow
    for bad in ([], [[1, 2]], [1, -1]):
        with pytest.raises(ValueError, match="ages must be"):
            ensemble_weights(np.array(bad), 0.1)


def test_the_action_is_the_weighted_mean_of_every_live_chunks_prediction_for_this_step() -> None:
    rng = np.random.default_rng(0)
    chunks = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(6)]
    ens = TemporalEnsemble(rate=0.3)
    for t, c in enumerate(chunks):
        ens.add(c)
        live = [(t - s, chunks[s][t - s]) for s in range(t + 1) if t - s < 4]  # at most 4 chunks overlap
        w = np.exp(-0.3 * np.array([a for a, _ in live]))
        expected = (w[:, None] * np.stack([p for _, p in live])).sum(0) / w.sum()
        np.testing.assert_allclose(ens.action(), expected, rtol=1e-5)
        ens.advance()
    assert len(ens._chunks) == 3  # the chunk of step 2 has no prediction left for step 6


def test_one_chunk_alone_is_executed_as_it_is_and_a_huge_rate_executes_each_first_action() -> None:
    c = np.arange(12, dtype=np.float32).reshape(4, 3)
    ens = TemporalEnsemble(rate=0.2)
    ens.add(c)
    for t in range(4):
        np.testing.assert_array_equal(ens.action(), c[t])
        ens.advance()
    with pytest.raises(RuntimeError, match="no chunk predicts this step"):
        ens.action()
    ens = TemporalEnsemble(rate=1e6)
    for k in range(3):
        ens.add(c + 100 * k)
        np.testing.assert_allclose(ens.action(), c[0] + 100 * k)
        ens.advance()


def test_horizon_reset_and_bad_input() -> None:
    c = np.ones((8, 2), np.float32)
    ens = TemporalEnsemble(rate=0.0, horizon=2)
    ens.add(c)
    ens.advance()
    ens.advance()
    with pytest.raises(RuntimeError):
        ens.action()  # only the first 2 predictions were kept
    ens.add(c)
    ens.reset()
    assert ens.t == 0 and not ens._chunks
    with pytest.raises(ValueError, match="chunk is"):
        ens.add(np.ones(3))
    ens.add(c)
    with pytest.raises(ValueError, match="action_dim 3 differs"):
        ens.add(np.ones((8, 3)))
    for bad in (float("nan"), float("inf"), True, "0.2"):
        with pytest.raises(ValueError, match="rate must be a finite number"):
            TemporalEnsemble(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        TemporalEnsemble(0.1, horizon=0)


class CountingPolicy:
    """Chunk k (the k-th query) predicts 100 * k + i for its i-th step; records the observations it saw."""

    def __init__(self, length: int = 4) -> None:
        self.length, self.seen = length, []

    def sample_chunk(self, obs_batch: list[int]) -> np.ndarray:
        k = len(self.seen)
        self.seen.append(obs_batch[0])
        return (100.0 * k + np.arange(self.length, dtype=np.float32))[None, :, None]


def run(schedule: ChunkSchedule, policy: CountingPolicy, steps: int, takeover_at: int | None = None) -> list[float]:
    actions = []
    for t in range(steps):
        a, queried = schedule.action(policy, t)
        assert queried == (policy.seen[-1] == t)
        actions.append(float(a[0]))
        schedule.executed(by_policy=t != takeover_at)
    return actions


def test_a_schedule_without_ensemble_runs_n_action_steps_of_each_chunk() -> None:
    policy = CountingPolicy()
    assert run(ChunkSchedule(3), policy, 7) == [0, 1, 2, 100, 101, 102, 200]
    assert policy.seen == [0, 3, 6]


def test_an_ensembled_schedule_queries_every_k_steps_and_averages_the_live_chunks_between() -> None:
    policy = CountingPolicy()
    w = ensemble_weights(np.array([2, 0]), 0.5)
    got = run(ChunkSchedule(4, rate=0.5, every=2), policy, 4)
    assert policy.seen == [0, 2]
    np.testing.assert_allclose(got, [0, 1, w @ [2, 100], ensemble_weights(np.array([3, 1]), 0.5) @ [3, 101]], rtol=1e-6)
    # chunks shorter than the stride: a new one as soon as none predicts the step
    policy = CountingPolicy(length=2)
    assert run(ChunkSchedule(4, rate=1e6, every=5), policy, 5) == [0, 1, 100, 101, 200]
    assert policy.seen == [0, 2, 4]


def test_after_someone_else_acted_the_schedule_forgets_its_chunks_and_queries_again() -> None:
    for schedule in (ChunkSchedule(4), ChunkSchedule(4, rate=0.3, every=3)):
        policy = CountingPolicy()
        got = run(schedule, policy, 3, takeover_at=0)
        assert policy.seen == [0, 1] and got[1:] == [100, 101]  # no stale mean with chunk 0's predictions


def test_a_schedule_rejects_bad_settings() -> None:
    for bad in (0, 1.5, -1):
        with pytest.raises(ValueError, match="n_action_steps must be"):
            ChunkSchedule(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="temporal_ensemble_every must be"):
        ChunkSchedule(4, rate=0.3, every=0)
    with pytest.raises(ValueError, match="rate must be a finite number"):
        ChunkSchedule(4, rate=float("nan"))
