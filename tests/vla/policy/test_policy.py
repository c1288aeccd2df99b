import numpy as np
import pytest

from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import DIRECTION, LineDataset
from vla.interfaces import Policy
from vla.policy.model import VLAModel
from vla.policy.policy import TorchPolicy


def make_policy(cameras: tuple[str, ...] = ("agentview",), **kw: object) -> tuple[TorchPolicy, LineDataset]:
    data = LineDataset(n=8, cameras=cameras)
    return TorchPolicy(VLAModel(small_config(cameras, **kw), data.stats()), seed=7), data


def test_protocol_shapes_and_seeded_determinism() -> None:
    policy, data = make_policy()
    assert isinstance(policy, Policy)
    obs = [data.observation(i) for i in range(3)]
    a = policy.sample_chunk(obs)
    assert a.shape == (3, 16, 2) and a.dtype == np.float32 and np.isfinite(a).all()
    b = policy.sample_chunk(obs)
    assert not np.array_equal(a, b)  # fresh noise on each call
    policy.reset()
    np.testing.assert_array_equal(policy.sample_chunk(obs), a)  # reset reseeds
    policy.reset(seed=123)  # an episode's own seed (the evaluator's), whatever ran before
    c = policy.sample_chunk(obs)
    assert not np.array_equal(c, a)
    policy.sample_chunk(obs)
    policy.reset(seed=123)
    np.testing.assert_array_equal(policy.sample_chunk(obs), c)


def test_noise_scale_scales_the_initial_noise_and_zero_is_seed_free() -> None:
    policy, data = make_policy()
    obs = [data.observation(i) for i in range(2)]
    noise = np.random.default_rng(0).standard_normal((2, 16, 2)).astype(np.float32)
    half = policy.sample_chunk(obs, noise=0.5 * noise)
    policy.reset()
    policy.model.cfg.with_noise_scale(0.5)
    np.testing.assert_allclose(policy.sample_chunk(obs, noise=noise), half, atol=1e-6)
    policy.model.cfg.with_noise_scale(0.0)  # every chunk from the prior's mean: the seed no longer matters
    policy.reset(seed=1)
    a = policy.sample_chunk(obs)
    policy.reset(seed=2)
    np.testing.assert_array_equal(policy.sample_chunk(obs), a)
    assert not np.array_equal(a, half)
    for bad in (-0.1, float("nan")):
        with pytest.raises(ValueError, match="noise_scale must be finite and >= 0"):
            policy.model.cfg.with_noise_scale(bad)
        assert policy.model.cfg.noise_scale == 0.0  # a rejected value changes nothing


def test_bad_observations_are_named() -> None:
    policy, data = make_policy()
    obs = data.observation(0)
    with pytest.raises(KeyError, match=r"camera 'front' is not known to this policy.*agentview"):
        policy.sample_chunk([{**obs, "images": {**obs["images"], "front": obs["images"]["agentview"]}}])
    with pytest.raises(KeyError, match="lacks camera 'agentview'"):
        policy.sample_chunk([{**obs, "images": {}}])
    with pytest.raises(ValueError, match="instruction is empty"):
        policy.sample_chunk([{**obs, "instruction": ""}])
    with pytest.raises(ValueError, match=r"state has shape \(5,\).*\(3,\)"):
        policy.sample_chunk([{**obs, "state": np.zeros(5, np.float32)}])
    with pytest.raises(ValueError, match="uint8 HxWx3"):
        policy.sample_chunk([{**obs, "images": {"agentview": obs["images"]["agentview"].astype(np.float32)}}])
    with pytest.raises(ValueError, match="prefix has shape"):
        policy.sample_chunk([obs], prefix=np.zeros((1, 3, 5), np.float32))
    with pytest.raises(ValueError, match="obs_batch is empty"):
        policy.sample_chunk([])


def test_history_builds_up_and_resets() -> None:
    policy, data = make_policy(n_obs_steps=3)
    obs = [data.observation(0)]
    inputs = policy.history.push(obs)
    assert inputs.obs_mask.tolist() == [[False, False, True]]
    inputs = policy.history.push(obs)
    assert inputs.obs_mask.tolist() == [[False, True, True]]
    assert policy.sample_chunk(obs).shape == (1, 16, 2)
    policy.reset()
    assert policy.history.push(obs).obs_mask.tolist() == [[False, False, True]]


@pytest.mark.slow
def test_prefix_is_reproduced_and_continued_smoothly(trained_line_model) -> None:
    """The bimodal LineDataset: only the prefix says which way the line goes. A prefix-trained
    model must keep the prefix bit-exact, follow its branch, and not jump at the boundary.
    (A model trained with max_prefix=0 and the same inpainting picks the wrong branch ~40% of
    the time, with a mean boundary jump of ~4 typical steps: measured when writing this test.)"""
    model, data = trained_line_model
    policy = TorchPolicy(model, seed=0)
    n, p = 64, 4
    obs = [data.observation(i) for i in range(n)]
    truth = np.stack([data.actions(i) for i in range(n)])
    out = policy.sample_chunk(obs, prefix=truth[:, :p])
    np.testing.assert_array_equal(out[:, :p], truth[:, :p])
    typical = np.linalg.norm(np.diff(truth, axis=1), axis=-1).mean()
    jump = np.linalg.norm(out[:, p] - out[:, p - 1], axis=-1) / typical
    assert float(np.mean(jump)) < 2.0 and float(np.median(jump)) < 1.5
    direction_ok = ((out[:, -1] - out[:, p - 1]) @ DIRECTION) * data.sign[:n] > 0
    assert direction_ok.mean() >= 0.95
    # Same with the opposite branch as prefix: the model follows whatever was committed.
    mirrored = 2 * data.center[:n, None] - truth  # the line from c in the other direction
    flipped = policy.sample_chunk(obs, prefix=mirrored[:, :p])
    assert (((flipped[:, -1] - flipped[:, p - 1]) @ DIRECTION) * -data.sign[:n] > 0).mean() >= 0.9


@pytest.mark.slow
def test_guidance_moves_samples_to_a_fixed_chunk(trained_line_model) -> None:
    model, data = trained_line_model
    n = 32
    obs = [data.observation(i) for i in range(n)]
    target = np.tile(np.array([0.5, -0.3], np.float32), (n, 16, 1))
    seen: list[float] = []

    def towards_target(x1_hat: np.ndarray, tau: float) -> np.ndarray:
        assert x1_hat.shape == target.shape
        seen.append(tau)
        return target - x1_hat

    plain = TorchPolicy(model, seed=0).sample_chunk(obs)
    guided = TorchPolicy(model, seed=0).sample_chunk(obs, guidance=towards_target)
    assert seen == pytest.approx([k / 10 for k in range(10)])  # called at every Euler step
    before, after = np.abs(plain - target).mean(), np.abs(guided - target).mean()
    assert after < 0.35 * before
    # The VJP variant (RTC's exact J^T) also moves towards the target.
    vjp = TorchPolicy(model, seed=0, guidance_vjp=True).sample_chunk(obs, guidance=lambda x, t: target - x)
    assert np.abs(vjp - target).mean() < 0.8 * before
    # Guidance never touches a committed prefix.
    prefix = np.stack([data.actions(i)[:3] for i in range(n)])
    out = TorchPolicy(model, seed=0).sample_chunk(obs, prefix=prefix, guidance=towards_target)
    np.testing.assert_array_equal(out[:, :3], prefix)
