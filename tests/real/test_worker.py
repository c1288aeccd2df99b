import time

import numpy as np
import pytest

from real.testing import SyntheticPolicy
from real.worker import FakeClock, InferenceRequest, ThreadWorker


def obs():
    return {"images": {}, "state": SyntheticPolicy(6).curve(0.0).astype(np.float32), "instruction": "",
            "timestamp": 0.0}


def wait_result(worker, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = worker.poll()
        if r is not None:
            return r
        time.sleep(0.001)
    raise AssertionError("no result")


def test_thread_worker_runs_policy_off_thread_one_request_at_a_time():
    pol = SyntheticPolicy(6, 10, delay_s=0.05)
    w = ThreadWorker(pol)
    try:
        w.submit(InferenceRequest(0, 3, obs(), None, None))
        assert w.busy
        with pytest.raises(RuntimeError, match="in flight"):
            w.submit(InferenceRequest(1, 3, obs(), None, None))
        r = wait_result(w)
        assert r.error is None and r.chunk.shape == (1, 10, 6) and r.latency_s >= 0.04
        assert not w.busy and w.alive
    finally:
        w.close()
    assert not w.alive


class Exploding:
    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        raise RuntimeError("CUDA out of memory")

    def reset(self):
        pass


def test_thread_worker_survives_policy_exceptions():
    w = ThreadWorker(Exploding(), FakeClock())
    try:
        w.submit(InferenceRequest(0, 0, obs(), None, None))
        r = wait_result(w)
        assert r.chunk is None and "CUDA out of memory" in r.error and w.alive
    finally:
        w.close()


def test_synthetic_policy_honours_prefix_and_guidance():
    pol = SyntheticPolicy(6, 20, chunk_offset=0.1, seed=3)
    free = pol.sample_chunk([obs()])
    prefix = free[:, 5:9].astype(np.float32)
    cont = pol.sample_chunk([obs()], prefix=prefix)
    np.testing.assert_array_equal(cont[:, :4], prefix)
    step = np.linalg.norm(np.diff(free[0], axis=0), axis=1)
    assert np.linalg.norm(cont[0, 4] - cont[0, 3]) <= 1.5 * np.median(step)  # continues, no jump
    target = np.ones((1, 20, 6))
    guided = pol.sample_chunk([obs()], guidance=lambda est, tau: target - est)
    np.testing.assert_allclose(guided, target, atol=1e-6)
    with pytest.raises(ValueError, match="prefix shape"):
        pol.sample_chunk([obs()], prefix=np.zeros((1, 20, 6)))
