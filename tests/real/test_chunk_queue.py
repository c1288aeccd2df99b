import numpy as np
import pytest

from real.chunk_queue import ChunkQueue, TickEnsemble, align_chunk


def chunk(n: int, a: int = 2, start: float = 0.0) -> np.ndarray:
    return (start + np.arange(n, dtype=np.float64))[:, None] * np.ones(a)


@pytest.mark.parametrize(("first", "arrival", "dropped"), [(11, 11, 0), (11, 15, 4), (11, 5, 0), (11, 31, 20),
                                                          (11, 40, 20)])
def test_align_chunk_drops_exactly_the_past_ticks(first, arrival, dropped):
    c = chunk(20)
    al = align_chunk(c, first, arrival)
    assert al.n_dropped == dropped
    assert al.first_tick == first + dropped
    np.testing.assert_array_equal(al.kept, c[dropped:])
    # every kept action still sits at its own tick: kept[j] belongs to first + dropped + j
    for j, act in enumerate(al.kept):
        assert act[0] == al.first_tick + j - first


def test_align_chunk_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        align_chunk(np.zeros(5), 0, 0)
    with pytest.raises(ValueError, match="floating"):
        align_chunk(np.zeros((5, 2), dtype=np.int64), 0, 0)


def test_pop_returns_action_of_its_tick_and_forgets_older():
    q = ChunkQueue(2)
    q.replace(chunk(5), first_tick=10, chunk_id=7)
    assert q.pop(9) is None
    act, cid = q.pop(12)  # ticks 10, 11 pass unexecuted: they are dropped
    assert act[0] == 2 and cid == 7
    assert q.start_tick == 13 and len(q) == 2
    assert q.remaining_after(12) == 2 and q.remaining_after(13) == 1
    assert q.pop(20) is None and len(q) == 0 and q.remaining_after(20) == 0


def test_actions_between_and_remaining():
    q = ChunkQueue(2)
    q.replace(chunk(5), first_tick=10, chunk_id=0)
    np.testing.assert_array_equal(q.actions_between(11, 13), chunk(5)[1:3])
    assert len(q.actions_between(14, 99)) == 1
    assert len(q.actions_between(5, 12)) == 0  # not covered from the start: nothing
    assert q.remaining_after(3) == 5


def test_merge_keeps_committed_prefix_then_new_chunk():
    q = ChunkQueue(2)
    q.replace(chunk(10), first_tick=0, chunk_id=0)  # old actions 0..9 for ticks 0..9
    q.pop(3)
    new = chunk(8, start=100.0)  # new chunk for ticks 4..11
    q.merge(new, first_tick=4, chunk_id=1, keep_until_tick=6)
    got = [q.pop(t) for t in range(4, 12)]
    assert [g[1] for g in got] == [0, 0, 1, 1, 1, 1, 1, 1]
    assert [g[0][0] for g in got] == [4, 5, 102, 103, 104, 105, 106, 107]


def test_merge_when_queue_ran_dry_uses_new_chunk_only():
    q = ChunkQueue(2)
    q.replace(chunk(2), first_tick=0, chunk_id=0)
    q.pop(5)
    q.merge(chunk(3, start=50.0), first_tick=6, chunk_id=1, keep_until_tick=9)
    assert q.pop(6)[0][0] == 50 and q.pop(6 + 1)[1] == 1


def test_queue_rejects_wrong_action_dim():
    q = ChunkQueue(3)
    with pytest.raises(ValueError, match="action dim"):
        q.replace(chunk(4, a=2), 0, 0)
    with pytest.raises(ValueError, match="positive"):
        ChunkQueue(0)


def test_blend_switch_ramps_from_the_old_plan_to_the_new():
    from real.chunk_queue import blend_switch

    old, new = np.zeros((5, 2)), np.ones((6, 2), np.float32)
    out = blend_switch(old, new, 2)
    np.testing.assert_allclose(out[:, 0], [1 / 3, 2 / 3, 1, 1, 1, 1])  # weights 2/3, 1/3 on the old plan
    assert out.dtype == np.float64 and new[0, 0] == 1  # the input is not changed
    np.testing.assert_allclose(blend_switch(old[:1], new, 3)[:2, 0], [1 / 4, 1])  # no old action: the new one
    np.testing.assert_array_equal(blend_switch(old, new, 0), new)


def test_tick_ensemble_one_chunk_runs_its_actions_at_their_ticks():
    e = TickEnsemble(2, rate=0.3)
    c = chunk(5)
    e.add(c, first_tick=3, chunk_id=7, origin_tick=3)
    assert e.pop(2) is None  # nothing predicts tick 2
    for t in range(3, 8):
        action, cid = e.pop(t)
        np.testing.assert_allclose(action, c[t - 3])
        assert cid == 7
    assert e.pop(8) is None and len(e) == 0


def test_tick_ensemble_mean_weights_recent_predictions_by_age():
    e = TickEnsemble(2, rate=0.5)
    old, new = chunk(6, start=0.0), chunk(6, start=100.0)
    e.add(old[2:], first_tick=12, chunk_id=1, origin_tick=10)  # planned from tick 10, two stale actions dropped
    e.add(new, first_tick=13, chunk_id=2, origin_tick=13)
    assert e.remaining_after(12) == 6 and e.end_tick == 19
    action, cid = e.pop(12)  # only the old chunk predicts tick 12
    np.testing.assert_allclose(action, old[2])
    assert cid == 1
    action, cid = e.pop(14)  # tick 13 is skipped and forgotten; ages 4 (old) and 1 (new)
    w_old, w_new = np.exp(-0.5 * 4), np.exp(-0.5 * 1)
    np.testing.assert_allclose(action, (w_old * old[4] + w_new * new[1]) / (w_old + w_new))
    assert cid == 2  # the newest prediction's chunk


def test_tick_ensemble_large_rate_follows_the_newest_chunk_and_forgets_on_drop():
    e = TickEnsemble(2, rate=1e6)
    e.add(chunk(8), first_tick=0, chunk_id=0, origin_tick=0)
    e.add(chunk(8, start=50.0), first_tick=2, chunk_id=1, origin_tick=1)
    np.testing.assert_allclose(e.pop(3)[0], chunk(8, start=50.0)[1])
    assert e.drop_before(e.end_tick) == 6 and len(e) == 0 and e.pop(4) is None
    # a chunk after the hold runs from its first tick; the ticks already popped (0-4) are never kept
    e.add(chunk(4), first_tick=6, chunk_id=2, origin_tick=6)
    e.add(chunk(4, start=20.0), first_tick=3, chunk_id=3, origin_tick=3)
    assert e.remaining_after(5) == 4 and e.end_tick == 10
    np.testing.assert_allclose(e.pop(5)[0], chunk(4, start=20.0)[2])  # only chunk 3 predicts tick 5
    action, cid = e.pop(6)  # both predict tick 6: the newest (age 0) wins at this rate
    np.testing.assert_allclose(action, chunk(4)[0])
    assert cid == 2


def test_tick_ensemble_rejects_bad_input():
    with pytest.raises(ValueError, match="finite"):
        TickEnsemble(2, rate=float("nan"))
    with pytest.raises(ValueError, match="action_dim"):
        TickEnsemble(0, rate=0.3)
    e = TickEnsemble(2, rate=0.3)
    with pytest.raises(ValueError, match="action dim 3"):
        e.add(np.zeros((4, 3)), 0, 0, 0)
    with pytest.raises(ValueError, match="origin_tick 2 is after first_tick 1"):
        e.add(chunk(4), 1, 0, 2)
    with pytest.raises(ValueError, match="floating point"):
        e.add(np.zeros((4, 2), dtype=np.int64), 0, 0, 0)
