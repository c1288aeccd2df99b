import numpy as np
import pytest

from real.executor import ExecutorConfig, rtc_weights
from real.testing import SyntheticPolicy
from tests.real.helpers import DT, A, executed, make, step_norms


@pytest.mark.parametrize("delay", [1, 3, 6])
def test_aligned_prefix_equals_what_executes_meanwhile(delay):
    ex, _, worker, _, _ = make("aligned", delay_ticks=delay, chunk_offset=0.05, initial_latency_ticks=delay)
    ex.run(200)
    ran = executed(ex)
    with_prefix = [r for r in worker.requests if r.prefix is not None and r.trigger_tick + delay < 200]
    assert len(with_prefix) >= 5
    for req in with_prefix:
        k, p = req.trigger_tick, req.prefix.shape[1]
        assert p == delay  # delay - 1 ticks run from the old queue, + 1 tick of margin
        ran_meanwhile = np.stack([ran[k + 1 + i] for i in range(p)])
        np.testing.assert_allclose(ran_meanwhile, req.prefix[0], atol=1e-6)
        # the observation carries the command the arm runs before the prefix: the trigger tick's
        np.testing.assert_allclose(req.observation["command"], ex_commands(ex)[k], atol=1e-6)


def ex_commands(ex) -> dict[int, np.ndarray]:
    return {r.tick: r.command for r in ex.records}


@pytest.mark.parametrize(("estimate", "actual"), [(1, 4), (2, 7), (5, 5)])
def test_aligned_drops_stale_actions_and_runs_the_rest_at_their_ticks(estimate, actual):
    ex, _, worker, _, _ = make("aligned", delay_ticks=actual, initial_latency_ticks=estimate,
                               margin_ticks=0, latency_window=1, horizon=30)
    ex.run(150)
    by_tick = {r.tick: r for r in ex.records}
    checked = 0
    for res in worker.results[1:]:
        k, rid, n_prefix = res.request.trigger_tick, res.request.request_id, res.request.meta["n_prefix"]
        arrival = k + actual
        if arrival not in by_tick:
            continue
        chunk = res.chunk[0]
        # from the arrival on, tick t runs chunk[t - k - 1], i.e. the first (arrival - k - 1) were dropped
        for t in range(max(arrival, k + 1 + n_prefix), arrival + 5):
            if t in by_tick and by_tick[t].chunk_id == rid:
                np.testing.assert_allclose(by_tick[t].action, chunk[t - k - 1], atol=1e-6)
                checked += 1
    assert checked > 20
    assert ex.n_dropped > 0 if actual > 1 else True


def test_aligned_no_starvation_and_smooth_up_to_40_percent_delay():
    ex, *_ = make("aligned", delay_ticks=8, horizon=20, chunk_offset=0.03)
    ex.run(400)
    st = ex.stats()
    assert st["starved_ticks"] == 0 and st["chunks"] > 20
    steps, switches = step_norms(ex)
    assert switches.max() <= 1.5 * np.median(steps)


def test_naive_async_replaces_queue_and_jumps_back_in_time():
    ex, _, worker, _, _ = make("naive_async", delay_ticks=6, horizon=20)
    ex.run(200)
    by_tick = {r.tick: r for r in ex.records}
    for res in worker.results[1:4]:
        arrival = res.request.trigger_tick + 6
        # the whole chunk runs from its first action, though it was computed 6 ticks earlier
        np.testing.assert_allclose(by_tick[arrival].action, res.chunk[0, 0], atol=1e-6)
    steps, switches = step_norms(ex)
    assert switches.max() > 3 * np.median(steps)


def test_sync_infers_only_on_empty_queue_and_holds_meanwhile():
    ex, _, worker, _, _ = make("sync", delay_ticks=4, horizon=10)
    ex.run(60)
    for req in worker.requests:
        # no queued action existed after the trigger tick: the records show nothing ran in between
        later = [r for r in ex.records if req.trigger_tick < r.tick < req.trigger_tick + 4]
        assert all(r.action is None and r.hold == "starved" for r in later)
        assert req.prefix is None and req.guidance is None and "command" not in req.observation
    assert ex.stats()["starved_ticks"] > 0


def test_sync_executes_only_its_action_steps_per_chunk():
    ex, _, worker, _, _ = make("sync", delay_ticks=2, horizon=10, sync_action_steps=4)
    ex.run(60)
    assert len(worker.requests) >= 8
    for res in worker.results[:-1]:
        ran = [r for r in ex.records if r.chunk_id == res.request.request_id]
        assert len(ran) == 4  # then the queue is empty and the next inference starts
        np.testing.assert_allclose(np.stack([r.action for r in ran]), res.chunk[0, :4], atol=1e-6)


def test_rtc_passes_soft_mask_guidance_and_continues_previous_chunk():
    ex, _, worker, _, _ = make("rtc", delay_ticks=4, horizon=20, chunk_offset=0.05, initial_latency_ticks=4)
    ex.run(200)
    guided = [r for r in worker.results if r.request.guidance is not None]
    assert guided and all(r.request.prefix is None for r in worker.results)
    ran = executed(ex)
    for res in guided[:5]:
        k, p = res.request.trigger_tick, res.request.meta["n_prefix"]
        # weight 1 on the frozen part: the guided chunk equals the actions that ran meanwhile
        np.testing.assert_allclose(res.chunk[0, :p], np.stack([ran[k + 1 + i] for i in range(p)]), atol=1e-5)
    naive, *_ = make("naive_async", delay_ticks=4, horizon=20, chunk_offset=0.05)
    naive.run(200)
    assert step_norms(ex)[1].mean() < step_norms(naive)[1].mean()


@pytest.mark.parametrize("delay", [1, 3])
def test_ensemble_runs_the_age_weighted_mean_of_every_arrived_prediction(delay):
    ex, _, worker, _, _ = make("ensemble", delay_ticks=delay, horizon=12, chunk_offset=0.05, ensemble_rate=0.3)
    ex.run(120)
    # a request whenever the worker is free: one chunk every `delay` ticks, no prefix, no guidance
    assert len(worker.requests) >= 120 // delay - 2
    assert all(r.request.prefix is None and r.request.guidance is None for r in worker.results)
    arrived = {res.request.trigger_tick + delay: res for res in worker.results}
    checked = 0
    for rec in ex.records:
        if rec.action is None:
            continue
        # every chunk that had arrived by this tick and predicts it: chunk[i] is for trigger + 1 + i
        preds = [(res.chunk[0, rec.tick - res.request.trigger_tick - 1], rec.tick - res.request.trigger_tick - 1)
                 for at, res in arrived.items() if at <= rec.tick
                 and 0 <= rec.tick - res.request.trigger_tick - 1 < res.chunk.shape[1]]
        w = np.exp(-0.3 * np.array([age for _, age in preds]))
        np.testing.assert_allclose(rec.action, sum(wi * p for wi, (p, _) in zip(w, preds, strict=True)) / w.sum(),
                                   atol=1e-6)
        checked += len(preds) > 1
    assert checked > 50  # most ticks average several chunks
    assert ex.stats()["starved_ticks"] == 0


def test_ensemble_forgets_its_predictions_during_an_outside_hold():
    ex, *_ = make("ensemble", delay_ticks=2, horizon=12)
    ex.run(30)
    assert len(ex.queue) > 0
    ex.external_hold = ("inactive", "lifecycle node deactivated")
    ex.tick(30)
    assert len(ex.queue) == 0 and list(ex.records)[-1].hold == "inactive"
    ex.external_hold = None  # released: the next chunk runs from the tick it arrives, no gap
    for k in range(31, 45):
        ex.tick(k)
    after = [r for r in ex.records if r.tick > 33]
    assert after and all(r.action is not None and r.hold is None for r in after)


def test_rtc_weights_shape():
    w = rtc_weights(10, 3, 7)
    assert np.all(w[:3] == 1) and np.all(w[7:] == 0)
    assert np.all(np.diff(w[3:8]) < 0) and 0 < w[6] < w[3] < 1
    with pytest.raises(ValueError, match="frozen"):
        rtc_weights(10, 8, 7)


def test_delay_estimate_tracks_measured_latency():
    ex, *_ = make("aligned", delay_ticks=5, initial_latency_ticks=1, latency_percentile=100)
    assert ex.delay_estimate_ticks() == 1
    ex.run(100)
    assert ex.delay_estimate_ticks() == 5 and ex.trigger_threshold() == 5 + ex.cfg.margin_ticks
    assert ex.stats()["starved_ticks"] <= 5  # only the first, underestimated round can starve


def test_stale_observation_holds_and_stops_inference():
    ex, _, worker, robot, clock = make("aligned", delay_ticks=2, max_observation_age_s=0.2)
    ex.run(40)
    n_req = len(worker.requests)
    robot.frozen_at = clock.now()
    ex.run(40)
    recent = list(ex.records)[-30:]
    assert all(r.hold == "stale_observation" for r in recent)
    assert len(worker.requests) <= n_req + 1
    cmds = np.stack([r.command for r in recent])
    np.testing.assert_allclose(cmds[-1], cmds[-2])  # at rest


def test_dead_worker_and_hung_inference_hold():
    ex, _, worker, _, _ = make("aligned", delay_ticks=2)
    ex.run(30)
    worker.alive_flag = False
    ex.run(5)
    assert list(ex.records)[-1].hold == "dead_inference"
    ex2, _, worker2, _, _ = make("aligned", delay_ticks=2, inference_timeout_s=0.5)
    worker2.hang = True
    ex2.run(40)
    assert list(ex2.records)[-1].hold == "inference_timeout"


class Broken(SyntheticPolicy):
    def __init__(self, bad):
        super().__init__(A, 20, DT)
        self.bad = bad

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        if self.bad == "raise":
            raise RuntimeError("boom")
        return np.zeros((1, 20, A + 1), dtype=np.float32)


@pytest.mark.parametrize("bad", ["raise", "shape"])
def test_failing_policy_is_counted_and_makes_robot_hold(bad):
    ex, *_ = make("aligned", policy=Broken(bad), max_consecutive_failures=3)
    ex.run(30)
    assert ex.n_failures >= 3 and ex.n_chunks == 0
    assert list(ex.records)[-1].hold == "inference_failing"  # the worker is alive: not "dead"


class SlowClock:
    """A clock whose sleeps overshoot by 2.5 periods once, like a loaded machine."""

    def __init__(self):
        self.t, self.n = 0.0, 0

    def now(self):
        return self.t

    def sleep_until(self, t):
        self.n += 1
        self.t = max(self.t, t) + (2.5 * DT if self.n == 10 else 0.0)


def test_late_loop_skips_missed_ticks_and_keeps_phase():
    ex, *_ = make("aligned", delay_ticks=2)
    ex.clock = SlowClock()
    ex.run(30)
    ticks = [r.tick for r in ex.records]
    assert ex.n_overruns == 2 and len(ticks) == 28 and ticks[-1] == 29
    assert all(abs(r.started - r.scheduled) < DT for r in ex.records)


def test_config_validation():
    with pytest.raises(ValueError, match="mode"):
        ExecutorConfig(mode="fast")
    with pytest.raises(ValueError, match="rate_hz"):
        ExecutorConfig(rate_hz=0)
    with pytest.raises(ValueError, match="sync_action_steps"):
        ExecutorConfig(sync_action_steps=0)
    with pytest.raises(ValueError, match="dt"):
        make("aligned", rate_hz=50)
    with pytest.raises(ValueError, match="ensemble_rate"):
        ExecutorConfig(mode="ensemble", ensemble_rate=float("inf"))


@pytest.mark.parametrize("mode", ["aligned", "rtc"])
def test_real_threads_at_50hz_run_every_tick_or_account_for_it(mode):
    from real.executor import ChunkExecutor
    from real.safety import SafetyFilter
    from real.testing import FakeRobot
    from real.worker import MonotonicClock, ThreadWorker
    from tests.real.helpers import limits

    clock = MonotonicClock()
    pol = SyntheticPolicy(A, 50, 0.02, delay_s=0.04)
    robot = FakeRobot(pol.curve(0.0), clock)
    safety = SafetyFilter(limits(), 0.02)
    safety.reset(pol.curve(0.0))
    worker = ThreadWorker(pol, clock)
    ex = ChunkExecutor(worker, robot.observation, robot.send, safety, ExecutorConfig(mode=mode, rate_hz=50), clock)
    try:
        ex.run(50)
    finally:
        worker.close()
    # timing is for the benchmark; here: every tick either ran or was counted as skipped, in order
    ticks = [r.tick for r in ex.records]
    assert len(ticks) + ex.n_overruns == 50 and ticks == sorted(set(ticks))
    assert ex.n_chunks >= 1 and len(robot.commands) == len(ticks)


def test_delay_longer_than_chunk_degrades_without_policy_errors():
    ex, _, worker, _, _ = make("aligned", delay_ticks=25, horizon=20, initial_latency_ticks=30)
    ex.run(200)
    assert ex.n_failures == 0 and ex.n_chunks >= 3
    assert all(r.prefix is None or r.prefix.shape[1] < 20 for r in worker.requests)
    assert ex.stats()["starved_ticks"] > 0  # cannot keep up: the robot holds instead of jumping


def test_realtime_priority_failure_is_logged_not_fatal(caplog):
    ex, *_ = make("aligned", realtime_priority=10_000)  # no such SCHED_FIFO priority
    ex.run(5)
    assert "SCHED_FIFO" in caplog.text and len(ex.records) == 5


def test_blend_ticks_soften_switches_and_never_touch_the_committed_prefix():
    """The same offset chunks: with a ramp the switch steps shrink, and every action the policy was
    shown as its prefix still runs exactly."""
    jumps = {}
    for blend in (0, 3):
        ex, _, worker, _, _ = make("aligned", delay_ticks=3, chunk_offset=0.2, initial_latency_ticks=3,
                                   blend_ticks=blend)
        ex.run(200)
        ran = executed(ex)
        for req in (r for r in worker.requests if r.prefix is not None and r.trigger_tick + 3 < 200):
            k = req.trigger_tick
            np.testing.assert_allclose(np.stack([ran[k + 1 + i] for i in range(req.prefix.shape[1])]),
                                       req.prefix[0], atol=1e-6)
        steps, switches = step_norms(ex)
        jumps[blend] = switches.mean() / np.median(steps)
    assert jumps[3] < 0.7 * jumps[0]
    with pytest.raises(ValueError, match="blend_ticks"):
        ExecutorConfig(blend_ticks=-1)
