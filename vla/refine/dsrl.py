"""DSRL: steer a frozen flow policy by reinforcement learning over its initial noise (Wagenmaker et al.,
"Steering Your Diffusion Policy with Latent Space Reinforcement Learning", arXiv 2506.15799).

The flow policy maps an observation and an initial noise x0 to an action chunk, deterministically
(K Euler steps). DSRL leaves its weights alone and learns a small policy over x0 instead: SAC whose
action is the noise w in [-m, m]^(H x A) and whose environment is "run the frozen policy from w and
execute its chunk". What the policy can do is bounded by what its noise can reach, so the steered
policy stays on the demonstrations' manifold; what it learns is which of those behaviours succeed.

Ours is the paper's DSRL-SAC variant (its DSRL-NA, which fits Q on the executed actions and distils
it into noise space, decodes a batch of chunks in every TD target: too slow on this CPU), with
Monte-Carlo critic targets by default (`targets`, below):
- one decision is one chunk query (n_action_steps executed), the reward is the episode's sparse
  outcome at its last decision (1 on success, else 0; every end is terminal: the horizon is part of
  the task), discounted per decision;
- small MLPs (2 x 256, LayerNorm in the critics) against the paper's 3 x 2048, UTD 4 against 20,
  batch 128 against 256 (all for this CPU), no entropy bonus in the TD target (`backup_entropy`),
  TD targets clamped to the outcome's [0, 1], and the features' scale floored (`min_obs_std`);
- the actor starts at mean 0, std 1 (the base's own noise distribution, squashed to [-m, m]) and the
  replay starts with `warmup_episodes` of the base's noise, as the paper's initial rollouts do.
Everything here is torch; the online loop that runs episodes lives with the benchmark
(benchmarks/bench_dsrl.py) and the evaluator's "dsrl:" policy spec (vla/refine/dsrl_policy.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
CLIP = 10.0  # normalised features are clipped to +-CLIP


@dataclass
class DSRLConfig:
    hidden: int = 256
    layers: int = 2
    magnitude: float = 1.5  # |w| bound (the paper's action_magnitude for robomimic)
    gamma: float = 0.97  # per decision (~8 env steps)
    tau: float = 0.005
    lr: float = 3e-4
    batch_size: int = 128
    utd: int = 4  # gradient steps per new decision (a step costs ~15 ms on one core here)
    n_critics: int = 2
    target_entropy_per_dim: float = 0.0  # the paper's target entropy 0 (robomimic configs)
    init_alpha: float = 0.1
    # The entropy bonus in the TD target: off by default. Over H x A = 112 noise dimensions the bonus is
    # ~alpha * 160 nats a decision, which outweighs the sparse 0/1 outcome by far (Q reached 80 with it).
    backup_entropy: bool = False
    value_max: float = 1.0  # TD targets clamped to [0, value_max] (the outcome's bound; 0: no clamp)
    min_obs_std: float = 0.05  # floor of the features' scale, in their raw units
    # "mc": each decision's discounted outcome (gamma^(decisions to the end) x success), no bootstrap: Q of
    # the policies that collected the data, which the actor improves on by one step (Brandfonbrener et
    # al., arXiv 2106.08909); "td": SAC's bootstrapped targets. On pick_place's 15-demo base, td's
    # critics climbed to Q 0.92-0.94 by 300 episodes against a 0.3-0.5 success rate, and the actor's
    # mean noise fell below x0 = 0 (benchmarks/results/dsrl.md); mc's stayed at 0.13-0.18.
    targets: str = "mc"

    def validate(self) -> None:
        if self.hidden < 1 or self.layers < 1 or self.n_critics < 1 or self.batch_size < 1 or self.utd < 0:
            raise ValueError("DSRLConfig: hidden, layers, n_critics, batch_size must be >= 1, utd >= 0")
        if self.targets not in ("td", "mc"):
            raise ValueError(f"DSRLConfig.targets must be 'td' or 'mc', got {self.targets!r}")
        if not (self.magnitude > 0 and 0 < self.gamma <= 1 and 0 < self.tau <= 1 and self.lr > 0
                and self.init_alpha > 0):
            raise ValueError(f"DSRLConfig: magnitude, lr, init_alpha must be > 0, gamma and tau in (0, 1]: {self}")


# ---- pure math -------------------------------------------------------------------------------------

def squash(u: torch.Tensor, magnitude: float) -> torch.Tensor:
    """The noise the flow policy receives for a pre-squash Gaussian sample u: m * tanh(u)."""
    return magnitude * torch.tanh(u)


def squashed_log_prob(u: torch.Tensor, mu: torch.Tensor, log_std: torch.Tensor, magnitude: float) -> torch.Tensor:
    """log density of w = m * tanh(u), u ~ N(mu, exp(log_std)^2), summed over the last dimension.
    log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)) keeps it finite for large |u|."""
    std = log_std.exp()
    gauss = -0.5 * ((u - mu) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
    log_det = math.log(magnitude) + 2 * (math.log(2.0) - u - nn.functional.softplus(-2 * u))
    return (gauss - log_det).sum(-1)


def td_target(reward: torch.Tensor, done: torch.Tensor, q_next: torch.Tensor, logp_next: torch.Tensor,
              alpha: float | torch.Tensor, gamma: float) -> torch.Tensor:
    """SAC's soft Bellman target: r + gamma (1 - done) (min_i Q_i(s', w') - alpha log pi(w'|s'))."""
    return reward + gamma * (1.0 - done) * (q_next - alpha * logp_next)


def actor_objective(q: torch.Tensor, logp: torch.Tensor, alpha: float | torch.Tensor) -> torch.Tensor:
    """The actor's loss: E[alpha log pi(w|s) - Q(s, w)]."""
    return (alpha * logp - q).mean()


def alpha_objective(log_alpha: torch.Tensor, logp: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """The temperature's loss: -log_alpha E[log pi + target entropy] (entropy above target -> alpha falls)."""
    return -(log_alpha * (logp.detach() + target_entropy)).mean()


def sparse_transitions(n_decisions: int, success: bool) -> tuple[np.ndarray, np.ndarray]:
    """(reward, done) of an episode's decisions: 0 reward until the last, which gets the outcome;
    only the last is terminal (a time-out is a failure of this fixed-horizon task, not a cut)."""
    if n_decisions < 1:
        raise ValueError("an episode needs at least one decision")
    reward = np.zeros(n_decisions, np.float32)
    done = np.zeros(n_decisions, np.float32)
    reward[-1], done[-1] = float(success), 1.0
    return reward, done


def discounted_outcome(n_decisions: int, success: bool, gamma: float) -> np.ndarray:
    """Each decision's Monte-Carlo return under the sparse outcome: gamma^(n - 1 - i) x success."""
    if n_decisions < 1:
        raise ValueError("an episode needs at least one decision")
    return (float(success) * gamma ** np.arange(n_decisions - 1, -1, -1)).astype(np.float32)


# ---- networks --------------------------------------------------------------------------------------

def mlp(d_in: int, d_out: int, hidden: int, layers: int, norm: bool) -> nn.Sequential:
    mods: list[nn.Module] = []
    d = d_in
    for _ in range(layers):
        mods += [nn.Linear(d, hidden), *([nn.LayerNorm(hidden)] if norm else []), nn.ReLU()]
        d = hidden
    mods.append(nn.Linear(d, d_out))
    return nn.Sequential(*mods)


class NoiseActor(nn.Module):
    """s -> tanh-Gaussian over w; starts at mean 0, std 1 (the base policy's own noise, squashed)."""

    def __init__(self, obs_dim: int, noise_dim: int, cfg: DSRLConfig) -> None:
        super().__init__()
        self.net = mlp(obs_dim, 2 * noise_dim, cfg.hidden, cfg.layers, norm=False)
        last = self.net[-1]
        assert isinstance(last, nn.Linear)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.magnitude = cfg.magnitude

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_std = self.net(obs).chunk(2, -1)
        return mu, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def sample(self, obs: torch.Tensor, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_std = self(obs)
        eps = torch.randn(mu.shape, generator=generator, device=mu.device)
        u = mu + log_std.exp() * eps
        return squash(u, self.magnitude), squashed_log_prob(u, mu, log_std, self.magnitude)

    def mean(self, obs: torch.Tensor) -> torch.Tensor:
        return squash(self(obs)[0], self.magnitude)


class QEnsemble(nn.Module):
    """n critics Q_i(s, w) with LayerNorm (the paper's critics use it)."""

    def __init__(self, obs_dim: int, noise_dim: int, cfg: DSRLConfig) -> None:
        super().__init__()
        self.qs = nn.ModuleList([mlp(obs_dim + noise_dim, 1, cfg.hidden, cfg.layers, norm=True)
                                 for _ in range(cfg.n_critics)])

    def forward(self, obs: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, w], -1)
        return torch.stack([q(x).squeeze(-1) for q in self.qs])  # [n, B]


# ---- replay and agent ------------------------------------------------------------------------------

class Replay:
    """Decision-level transitions (s, w, r, s', done) in growing numpy arrays."""

    def __init__(self, obs_dim: int, noise_dim: int, gamma: float = 0.97) -> None:
        self.gamma = gamma
        self.ret = np.zeros(0, np.float32)
        self.obs = np.zeros((0, obs_dim), np.float32)
        self.next_obs = np.zeros((0, obs_dim), np.float32)
        self.w = np.zeros((0, noise_dim), np.float32)
        self.reward = np.zeros(0, np.float32)
        self.done = np.zeros(0, np.float32)

    def __len__(self) -> int:
        return len(self.reward)

    def add_episode(self, obs: np.ndarray, w: np.ndarray, success: bool) -> None:
        """One episode's decisions: obs [n, D] at each query, w [n, noise_dim] the noise used."""
        obs, w = np.asarray(obs, np.float32), np.asarray(w, np.float32)
        if obs.ndim != 2 or w.ndim != 2 or len(obs) != len(w) or obs.shape[1] != self.obs.shape[1] \
                or w.shape[1] != self.w.shape[1]:
            raise ValueError(f"episode shapes obs {obs.shape}, w {w.shape} do not match the replay "
                             f"({self.obs.shape[1]}, {self.w.shape[1]})")
        reward, done = sparse_transitions(len(obs), success)
        nxt = np.concatenate([obs[1:], obs[-1:]])  # the last is terminal: its next state is never used
        self.obs, self.next_obs = np.concatenate([self.obs, obs]), np.concatenate([self.next_obs, nxt])
        self.w, self.reward = np.concatenate([self.w, w]), np.concatenate([self.reward, reward])
        self.done = np.concatenate([self.done, done])
        self.ret = np.concatenate([self.ret, discounted_outcome(len(obs), success, self.gamma)])

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
        idx = rng.integers(0, len(self), n)
        return {k: torch.from_numpy(getattr(self, k)[idx]) for k in ("obs", "w", "reward", "next_obs", "done", "ret")}


class DSRLAgent:
    """SAC over the noise: `act(obs_features)` -> w, `update(batch)` -> losses; features are
    normalised by the statistics given at construction (stored with the weights)."""

    def __init__(self, obs_dim: int, noise_dim: int, cfg: DSRLConfig, obs_mean: np.ndarray | None = None,
                 obs_std: np.ndarray | None = None, seed: int = 0) -> None:
        cfg.validate()
        self.cfg, self.obs_dim, self.noise_dim = cfg, obs_dim, noise_dim
        self.obs_mean = np.zeros(obs_dim, np.float32) if obs_mean is None else np.asarray(obs_mean, np.float32)
        # a floor on the scale: a feature constant over the statistics' episodes (the cube's height while it
        # rests) would otherwise turn its first change (a lift) into inputs in the hundreds (Q passed 2 for
        # a 0/1 outcome)
        self.obs_std = np.ones(obs_dim, np.float32) if obs_std is None else np.maximum(
            np.asarray(obs_std, np.float32), cfg.min_obs_std)
        with torch.random.fork_rng():  # seeded initial weights without reseeding the caller's torch stream
            torch.manual_seed(seed)
            self.actor = NoiseActor(obs_dim, noise_dim, cfg)
            self.critic = QEnsemble(obs_dim, noise_dim, cfg)
            self.target = QEnsemble(obs_dim, noise_dim, cfg)
        self.target.load_state_dict(self.critic.state_dict())
        self.log_alpha = torch.tensor(math.log(cfg.init_alpha), requires_grad=True)
        self.opt_actor = torch.optim.Adam(self.actor.parameters(), lr=cfg.lr)
        self.opt_critic = torch.optim.Adam(self.critic.parameters(), lr=cfg.lr)
        self.opt_alpha = torch.optim.Adam([self.log_alpha], lr=cfg.lr)
        self.target_entropy = cfg.target_entropy_per_dim * noise_dim
        self.gen = torch.Generator().manual_seed(seed)
        self.updates = 0

    def normalise(self, obs: torch.Tensor) -> torch.Tensor:
        """Raw features -> the networks' inputs: standardised by the stored statistics, clipped to +-CLIP."""
        return ((obs - torch.from_numpy(self.obs_mean)) / torch.from_numpy(self.obs_std)).clamp(-CLIP, CLIP)

    @torch.no_grad()
    def act(self, obs: np.ndarray, deterministic: bool = False, generator: torch.Generator | None = None
            ) -> np.ndarray:
        """[B, obs_dim] raw features -> [B, noise_dim] noise in [-m, m] (sampled from `generator`, else
        the agent's own stream)."""
        x = self.normalise(torch.from_numpy(np.atleast_2d(np.asarray(obs, np.float32))))
        w = self.actor.mean(x) if deterministic else self.actor.sample(x, generator or self.gen)[0]
        return w.numpy()

    @torch.no_grad()
    def targets(self, next_obs: torch.Tensor, reward: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        """The critics' TD targets for normalised next features (min over the target critics)."""
        alpha = float(self.log_alpha.exp()) if self.cfg.backup_entropy else 0.0
        w_next, logp_next = self.actor.sample(next_obs, self.gen)
        q_next = self.target(next_obs, w_next).min(0).values
        target = td_target(reward, done, q_next, logp_next, alpha, self.cfg.gamma)
        if self.cfg.value_max > 0:  # a sparse 0/1 outcome's return lies in [0, 1]: no bootstrap beyond it
            target = target.clamp(0.0, self.cfg.value_max)
        return target

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One SAC step (critics, actor, temperature, target average) on raw-feature transitions."""
        obs, nxt = self.normalise(batch["obs"]), self.normalise(batch["next_obs"])
        alpha = self.log_alpha.exp().detach()
        target = batch["ret"] if self.cfg.targets == "mc" else self.targets(nxt, batch["reward"], batch["done"])
        q = self.critic(obs, batch["w"])
        critic_loss = ((q - target) ** 2).mean()
        self.opt_critic.zero_grad()
        critic_loss.backward()
        self.opt_critic.step()
        w, logp = self.actor.sample(obs, self.gen)
        # pessimistic (min over the critics) for the actor too: in 112 noise dimensions the actor finds
        # where one critic overestimates (Q 0.6-0.7 against a 0.3 success rate with the mean)
        q_pi = self.critic(obs, w).min(0).values
        actor_loss = actor_objective(q_pi, logp, alpha)
        self.opt_actor.zero_grad()
        actor_loss.backward()
        self.opt_actor.step()
        a_loss = alpha_objective(self.log_alpha, logp, self.target_entropy)
        self.opt_alpha.zero_grad()
        a_loss.backward()
        self.opt_alpha.step()
        with torch.no_grad():
            for p, tp in zip(self.critic.parameters(), self.target.parameters(), strict=True):
                tp.mul_(1 - self.cfg.tau).add_(p, alpha=self.cfg.tau)
        self.updates += 1
        return {"critic_loss": critic_loss.item(), "actor_loss": actor_loss.item(), "alpha": float(alpha),
                "q": q.mean().item(), "entropy": -logp.mean().item()}

    def save(self, path: str | Path) -> None:
        """The actor and its feature statistics as safetensors (what a steered policy needs)."""
        import json

        from safetensors.torch import save_file

        tensors = {f"actor.{k}": v.contiguous() for k, v in self.actor.state_dict().items()}
        tensors["obs_mean"], tensors["obs_std"] = torch.from_numpy(self.obs_mean), torch.from_numpy(self.obs_std)
        meta = {"config": json.dumps(asdict(self.cfg)), "obs_dim": str(self.obs_dim),
                "noise_dim": str(self.noise_dim)}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(path), metadata=meta)


def load_actor(path: str | Path) -> DSRLAgent:
    """A saved agent's actor (for acting; its critics are not saved) with one-line errors."""
    import json

    from safetensors import safe_open

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"dsrl actor not found: {p}")
    with safe_open(str(p), framework="pt") as f:
        meta: dict[str, Any] = f.metadata() or {}
        if not {"config", "obs_dim", "noise_dim"} <= set(meta):
            raise ValueError(f"{p}: not a DSRL actor (metadata lacks config / obs_dim / noise_dim)")
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    cfg = DSRLConfig(**json.loads(meta["config"]))
    agent = DSRLAgent(int(meta["obs_dim"]), int(meta["noise_dim"]), cfg, tensors["obs_mean"].numpy(),
                      tensors["obs_std"].numpy())
    agent.actor.load_state_dict({k[len("actor."):]: v for k, v in tensors.items() if k.startswith("actor.")})
    return agent
