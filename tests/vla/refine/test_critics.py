"""HABC critics on a toy problem with a known answer: 1-D positions, success iff x > 0."""

from dataclasses import replace
from typing import Any

import pytest
import torch

from vla.refine import habc_math as hm
from vla.refine.critics import CriticConfig, critic_values, train_critics
from vla.refine.methods.habc import HabcArgs


def habc_weights(critic: Any, x: torch.Tensor, next_index: torch.Tensor, done: torch.Tensor,
                 is_intervention: torch.Tensor, args: HabcArgs, **kw: Any) -> dict[str, torch.Tensor]:
    v, eff = critic_values(critic, x)
    return hm.habc_weights(v, eff, next_index, done, is_intervention, args, **kw)


def toy(n: int = 2000) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 1, generator=g) * 2 - 1
    viability = (x[:, 0] > 0).float()
    efficiency = torch.where(x[:, 0] > 0, 0.98 ** ((1 - x[:, 0]) * 20), torch.zeros(n))
    return {"features": x, "viability": viability, "viability_mask": torch.ones(n, dtype=torch.bool),
            "efficiency": efficiency, "efficiency_mask": x[:, 0] > 0}


def test_critics_learn_viability_and_weights_favour_progress() -> None:
    d = toy()
    cfg = CriticConfig(steps=400, hidden=32, ensemble=1)
    critic, losses = train_critics(d["features"], d["viability"], d["viability_mask"], d["efficiency"],
                                   d["efficiency_mask"], cfg)
    assert losses["viability_loss"] < 0.3
    # Transitions: from x to x + 0.2 (towards success) vs x to x - 0.2 (away), around x = 0.
    x = torch.tensor([[-0.1], [0.1], [0.1], [-0.1]])
    next_index = torch.tensor([1, 0, 3, 2])  # rows 0->1 improves, 1->0 worsens
    out = habc_weights(critic, x, next_index, torch.zeros(4, dtype=torch.bool),
                       torch.tensor([False, False, False, True]), HabcArgs())
    assert out["weight"][0] > 1.0 > out["weight"][1]
    assert out["weight"][3] == 1.0  # an intervention step is not the policy's: the loss rule weighs it
    assert out["viability"][1] > 0.5 > out["viability"][0]


def test_ablations_and_bad_input() -> None:
    d = toy(200)
    for kwargs in ({"use_gate": False}, {"single_critic": True}):
        args = replace(HabcArgs(), **kwargs)
        critic, _ = train_critics(d["features"], d["viability"], d["viability_mask"], d["efficiency"],
                                  d["efficiency_mask"], CriticConfig(steps=20, hidden=8),
                                  single_critic=args.single_critic)
        out = habc_weights(critic, d["features"], torch.arange(200), torch.zeros(200, dtype=torch.bool),
                           torch.zeros(200, dtype=torch.bool), args)
        expected_gate = 0.0 if kwargs.get("single_critic") else 0.5
        assert torch.all(out["gate"] == expected_gate)
        assert torch.isfinite(out["weight"]).all()
    with pytest.raises(ValueError, match="features must be"):
        train_critics(d["features"][:5], d["viability"], d["viability_mask"], d["efficiency"], d["efficiency_mask"],
                      CriticConfig(steps=1))
    with pytest.raises(ValueError, match="no labelled steps"):
        none = torch.zeros(200, dtype=torch.bool)
        train_critics(d["features"], d["viability"], none, d["efficiency"], none, CriticConfig(steps=1))


def episodes_of(n: int, length: int = 20) -> torch.Tensor:
    return torch.arange(n) // length


def test_held_out_episodes_early_stopping_and_the_ensemble() -> None:
    from vla.refine.critics import split_episodes

    d = toy(2000)
    episode = episodes_of(2000)
    train, val = split_episodes(episode, d["viability_mask"], 0.2, seed=0)
    assert len(set(episode[val].tolist()) & set(episode[train].tolist())) == 0  # whole episodes held out
    assert len(set(episode[val].tolist())) == 20 and len(train) + len(val) == 2000
    cfg = CriticConfig(steps=300, hidden=16, ensemble=3, eval_every=50, patience=3)
    critic, info = train_critics(d["features"], d["viability"], d["viability_mask"], d["efficiency"],
                                 d["efficiency_mask"], cfg, episode=episode)
    assert len(critic.members) == 3
    assert info["val_viability_auroc"] > 0.95 and info["val_efficiency_mae"] < 0.2
    assert 0 < info["viability_uncertainty"] < 0.5 and info["val_steps"] == len(val)
    assert 50 <= info["best_step"] <= 300
    # noise labels: the held-out loss stops improving early and the AUROC says the critic knows nothing
    noisy = (torch.rand(2000, generator=torch.Generator().manual_seed(1)) < 0.5).float()
    _, info = train_critics(d["features"], noisy, d["viability_mask"], d["efficiency"], d["efficiency_mask"],
                            CriticConfig(steps=1000, hidden=32, ensemble=1, eval_every=50, patience=3), episode=episode)
    assert info["best_step"] < 1000 and abs(info["val_viability_auroc"] - 0.5) < 0.1
    with pytest.raises(ValueError, match="ensemble >= 1"):
        train_critics(d["features"], d["viability"], d["viability_mask"], d["efficiency"], d["efficiency_mask"],
                      CriticConfig(steps=1, ensemble=0))


def test_td_rounds_give_targets_that_vary_inside_a_segment() -> None:
    # 50 episodes x 20 steps walking from x0 towards +1 or -1: the label is constant per episode,
    # bootstrapped values differ step by step
    g = torch.Generator().manual_seed(0)
    x0 = torch.rand(50, generator=g) * 0.4 - 0.2
    direction = torch.where(torch.rand(50, generator=g) < 0.5, 1.0, -1.0)
    x = (x0[:, None] + direction[:, None] * torch.linspace(0, 0.8, 20)[None]).reshape(-1, 1)
    label = (direction[:, None] > 0).float().expand(50, 20).reshape(-1)
    nxt = torch.arange(1000) + 1
    nxt[19::20] = torch.arange(19, 1000, 20)  # each episode's last step points to itself
    ones = torch.ones(1000, dtype=torch.bool)
    cfg = CriticConfig(steps=200, hidden=16, ensemble=1, lam=0.5, td_rounds=2, eval_every=50)
    _, info = train_critics(x, label, ones, torch.zeros(1000), torch.zeros(1000, dtype=torch.bool), cfg,
                            episode=episodes_of(1000), next_index=nxt)
    assert info["td_rounds"] == 2 and info["val_viability_auroc"] > 0.9
    _, info1 = train_critics(x, label, ones, torch.zeros(1000), torch.zeros(1000, dtype=torch.bool),
                             CriticConfig(steps=10, hidden=16, ensemble=1, lam=1.0, eval_every=50),
                             episode=episodes_of(1000), next_index=nxt)
    assert info1["td_rounds"] == 1


def test_lambda_advantages_tell_a_failed_run_from_a_successful_one_through_the_same_states() -> None:
    d = toy(400)
    cfg = CriticConfig(steps=200, hidden=16, ensemble=1)
    critic, _ = train_critics(d["features"], d["viability"], d["viability_mask"], d["efficiency"],
                              d["efficiency_mask"], cfg)
    # two episodes through the same three states; the first ends in success, the second times out
    x = torch.tensor([[-0.2], [0.0], [0.2]]).repeat(2, 1)
    next_index = torch.tensor([1, 2, 2, 4, 5, 5])
    done = torch.tensor([False, False, True, False, False, False])
    policy = torch.zeros(6, dtype=torch.bool)
    one_step = habc_weights(critic, x, next_index, done, policy, HabcArgs())["weight"]
    gae = habc_weights(critic, x, next_index, done, policy, HabcArgs(adv_lambda=1.0))["weight"]
    # one step: the outcome shows only at the last step; GAE carries it back to the first
    torch.testing.assert_close(one_step[:2], one_step[3:5])
    assert (gae[:3] > gae[3:]).all()
