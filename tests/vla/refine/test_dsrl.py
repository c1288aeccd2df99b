"""DSRL's pure parts (the squashed log-density, the soft TD target, the actor and temperature
objectives, the sparse transitions), the agent learning a one-step noise problem, and the steered
policy over a real tiny checkpoint: its noise reaches the flow policy, the spec loads it, and the
actor's file round-trips through safetensors."""

from pathlib import Path

import numpy as np
import pytest
import torch

from vla.refine.dsrl import (
    DSRLAgent,
    DSRLConfig,
    Replay,
    actor_objective,
    alpha_objective,
    discounted_outcome,
    load_actor,
    sparse_transitions,
    squash,
    squashed_log_prob,
    td_target,
)


def test_squashed_log_prob_matches_torch_transformed_distribution() -> None:
    from torch.distributions import Normal, TransformedDistribution
    from torch.distributions.transforms import AffineTransform, TanhTransform

    mu, log_std = torch.tensor([[0.3, -1.0, 0.0]]), torch.tensor([[-0.5, 0.2, 0.0]])
    u = torch.tensor([[0.1, -2.0, 3.5]])
    dist = TransformedDistribution(Normal(mu, log_std.exp()), [TanhTransform(), AffineTransform(0.0, 1.5)])
    want = dist.log_prob(squash(u, 1.5)).sum(-1)
    got = squashed_log_prob(u, mu, log_std, 1.5)
    assert torch.allclose(got, want, atol=1e-4)
    assert torch.isfinite(squashed_log_prob(torch.tensor([[40.0]]), torch.zeros(1, 1), torch.zeros(1, 1), 1.5)).all()


def test_td_target_bootstraps_only_before_the_end() -> None:
    r, done = torch.tensor([0.0, 1.0]), torch.tensor([0.0, 1.0])
    out = td_target(r, done, q_next=torch.tensor([0.5, 9.0]), logp_next=torch.tensor([2.0, 2.0]), alpha=0.1,
                    gamma=0.9)
    assert torch.allclose(out, torch.tensor([0.9 * (0.5 - 0.2), 1.0]))


def test_actor_and_temperature_objectives() -> None:
    q, logp = torch.tensor([1.0, 3.0]), torch.tensor([-1.0, -2.0])
    assert float(actor_objective(q, logp, 0.5)) == pytest.approx(((0.5 * -1 - 1) + (0.5 * -2 - 3)) / 2)
    log_alpha = torch.tensor(0.0, requires_grad=True)
    alpha_objective(log_alpha, logp, target_entropy=0.0).backward()
    # the policy's entropy (1.5) is above the target (0): the gradient raises log_alpha's loss, so alpha falls
    assert float(log_alpha.grad) == pytest.approx(1.5)


def test_sparse_transitions_reward_only_the_last_decision() -> None:
    r, d = sparse_transitions(3, True)
    assert r.tolist() == [0, 0, 1] and d.tolist() == [0, 0, 1]
    r, d = sparse_transitions(2, False)
    assert r.tolist() == [0, 0] and d.tolist() == [0, 1]
    with pytest.raises(ValueError, match="at least one"):
        sparse_transitions(0, True)


def test_discounted_outcome_is_the_monte_carlo_return() -> None:
    assert discounted_outcome(3, True, 0.5).tolist() == [0.25, 0.5, 1.0]
    assert discounted_outcome(2, False, 0.5).tolist() == [0.0, 0.0]
    rep = Replay(1, 1, gamma=0.5)
    rep.add_episode(np.zeros((2, 1)), np.zeros((2, 1)), success=True)
    assert rep.sample(8, np.random.default_rng(0))["ret"].unique().tolist() == [0.5, 1.0]


def test_replay_rejects_mismatched_shapes() -> None:
    rep = Replay(3, 2)
    rep.add_episode(np.zeros((4, 3)), np.zeros((4, 2)), success=True)
    assert len(rep) == 4 and rep.reward.tolist() == [0, 0, 0, 1]
    assert rep.next_obs[0].tolist() == rep.obs[1].tolist()
    with pytest.raises(ValueError, match=r"obs \(4, 5\)"):
        rep.add_episode(np.zeros((4, 5)), np.zeros((4, 2)), success=False)


@pytest.mark.parametrize("targets", ["td", "mc"])
def test_agent_learns_the_rewarded_half_of_the_noise_space(targets: str) -> None:
    """One decision per episode; success when the noise's first component is above 0.5. SAC must move
    its mean there from the base's N(0, 1) start."""
    rng = np.random.default_rng(0)
    agent = DSRLAgent(2, 4, DSRLConfig(hidden=64, batch_size=64, targets=targets), seed=0)
    rep = Replay(2, 4)
    obs = np.ones((1, 2), np.float32)
    for _ in range(300):
        w = agent.act(obs)
        rep.add_episode(obs, w, success=bool(w[0, 0] > 0.5))
        if len(rep) >= 32:
            for _ in range(2):
                agent.update(rep.sample(64, rng))
    assert agent.act(obs, deterministic=True)[0, 0] > 0.5
    hits = np.mean([agent.act(obs)[0, 0] > 0.5 for _ in range(200)])
    assert hits > 0.8


def test_features_are_floored_and_clipped_and_targets_bounded() -> None:
    """A feature constant in the statistics' episodes (a resting cube's height) must not blow up when it
    first moves, and a sparse 0/1 outcome's TD target stays in [0, 1]."""
    agent = DSRLAgent(2, 2, DSRLConfig(hidden=8, min_obs_std=0.05), obs_mean=np.zeros(2), obs_std=np.array([1e-6, 1]))
    assert agent.obs_std[0] == pytest.approx(0.05)
    assert agent.normalise(torch.tensor([[100.0, 0.5]])).tolist() == [[10.0, 0.5]]
    unclamped = DSRLAgent(2, 2, DSRLConfig(hidden=8, value_max=0))
    for a in (agent, unclamped):
        with torch.no_grad():
            for q in a.target.qs:
                q[-1].weight.zero_()
                q[-1].bias.fill_(5.0)  # target critics that overestimate
    args = (torch.zeros(3, 2), torch.tensor([0.0, 1.0, 0.0]), torch.tensor([0.0, 1.0, 1.0]))
    assert agent.targets(*args).tolist() == pytest.approx([1.0, 1.0, 0.0])
    assert unclamped.targets(*args).tolist() == pytest.approx([0.97 * 5, 1.0, 0.0])


def test_actor_file_round_trip_and_bad_files(tmp_path: Path) -> None:
    agent = DSRLAgent(3, 4, DSRLConfig(hidden=8), obs_mean=np.array([1, 2, 3]), obs_std=np.array([1, 1, 2]), seed=1)
    with torch.no_grad():
        agent.actor.net[-1].bias.add_(0.3)
    agent.save(tmp_path / "actor.safetensors")
    back = load_actor(tmp_path / "actor.safetensors")
    x = np.array([[0.5, 0.0, -1.0]], np.float32)
    assert np.allclose(back.act(x, deterministic=True), agent.act(x, deterministic=True))
    assert back.obs_std.tolist() == [1, 1, 2]
    with pytest.raises(FileNotFoundError, match="dsrl actor not found"):
        load_actor(tmp_path / "missing.safetensors")
    from safetensors.torch import save_file

    save_file({"x": torch.zeros(1)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match="not a DSRL actor"):
        load_actor(tmp_path / "other.safetensors")


def test_steered_policy_feeds_its_noise_to_the_flow_policy(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    from vla.policy.policy import load_torch_policy
    from vla.refine.dsrl_policy import SteeredPolicy, make_steered

    ckpt, _ = pretrained
    base = load_torch_policy(ckpt)
    h, a = base.cfg.chunk_size, base.cfg.action_dim
    obs = {"images": {}, "state": np.linspace(-1, 1, base.cfg.state_dim).astype(np.float32), "instruction": "pick",
           "timestamp": 0.0}
    agent = DSRLAgent(base.cfg.state_dim, h * a, DSRLConfig(hidden=8), seed=0)
    with torch.no_grad():
        agent.actor.net[-1].bias[: h * a].fill_(0.4)  # mean noise m * tanh(0.4) everywhere
    steered = SteeredPolicy(base, agent, mode="mean")
    steered.reset(0)
    chunk = steered.sample_chunk([obs])
    w = np.full((1, h, a), 1.5 * np.tanh(0.4), np.float32)
    base.reset(0)
    assert np.allclose(chunk, base.sample_chunk([obs], noise=w), atol=1e-5)
    feats, noise = steered.take_decisions()
    assert feats.shape == (1, base.cfg.state_dim) and np.allclose(noise, w.reshape(1, -1))
    zero = SteeredPolicy(base, None, mode="zero")
    base.reset(0)
    assert np.allclose(zero.sample_chunk([obs]), base.sample_chunk([obs], noise=np.zeros((1, h, a))), atol=1e-5)
    with pytest.raises(ValueError, match="needs an actor"):
        SteeredPolicy(base, None, mode="mean")
    wrong = DSRLAgent(base.cfg.state_dim, 5, DSRLConfig(hidden=8))
    with pytest.raises(ValueError, match="noise_dim 5"):
        SteeredPolicy(base, wrong)
    shared = DSRLAgent(base.cfg.state_dim, a, DSRLConfig(hidden=8), seed=0)  # one A-vector for every step
    with torch.no_grad():
        shared.actor.net[-1].bias[:a].copy_(torch.linspace(-1, 1, a))
    steered_a = SteeredPolicy(base, shared, mode="mean")
    steered_a.reset(0)
    got = steered_a.sample_chunk([obs])
    x0 = np.repeat((1.5 * np.tanh(np.linspace(-1, 1, a)))[None, None].astype(np.float32), h, 1)
    base.reset(0)
    assert np.allclose(got, base.sample_chunk([obs], noise=x0), atol=1e-5)
    assert steered_a.take_decisions()[1].shape == (1, a)
    sampled = SteeredPolicy(base, agent, mode="sample")  # seeded: the stream restarts with each episode's seed
    draws = []
    for seed in (3, 3, 4):
        sampled.reset(seed)
        draws.append(sampled.sample_chunk([obs]))
    assert np.allclose(draws[0], draws[1]) and not np.allclose(draws[0], draws[2])
    agent.save(tmp_path / "a.safetensors")
    spec = make_steered(f"ckpt={ckpt},actor={tmp_path / 'a.safetensors'}")
    spec.reset(0)
    assert np.allclose(spec.sample_chunk([obs]), chunk, atol=1e-5)
    with pytest.raises(ValueError, match="mode must be one of"):
        make_steered(f"ckpt={ckpt},mode=greedy")


def test_the_evaluator_runs_a_steered_policy(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    """`vla eval dsrl:...` on the real task: the registry finds the spec, episodes run and record."""
    from sim.evaluate import EvalConfig, run_evaluation
    from vla.policy.policy import load_torch_policy

    ckpt, _ = pretrained
    agent = DSRLAgent(load_torch_policy(ckpt).cfg.state_dim, 7, DSRLConfig(hidden=8), seed=0)
    agent.save(tmp_path / "a.safetensors")
    out = run_evaluation(EvalConfig(task="pick_place", policy=f"dsrl:ckpt={ckpt},actor={tmp_path / 'a.safetensors'}",
                                    episodes=2, seed_range="collect", workers=1, videos=0, obs_mode="state", cameras=[],
                                    horizon=16, out_dir=str(tmp_path / "eval")), progress=False)
    assert out["episodes"] == 2 and all(e["length"] == 16 for e in out["episodes_detail"])
