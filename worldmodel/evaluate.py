"""`vla wm eval`: how far the world model can be trusted, on held-out episodes.

- k-step error (k = 1, 5, 10 chunks, logged actions, every chunk-aligned start) of the latent and
  of the object-pose probe (metres) against the copy-last-state baseline, which predicts that
  nothing moves;
- success AUROC and ECE, per chunk (one step from a real state) and per episode (the final
  imagined success of a replay of the whole logged action sequence from the first frame);
- action corruption: the same replays with another episode's actions or with noised actions must
  lower the predicted success of the episodes that really succeeded;
- a PNG of real vs imagined probe trajectories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from worldmodel.data import EpisodeData
from worldmodel.imagined_env import ImaginedEnv, StartStates, replay
from worldmodel.metrics import auroc, ece
from worldmodel.model import WorldModel

K_STEPS = (1, 5, 10)


# Object positions beyond this (m) are physics glitches (a cube launched off the table), not
# behaviour to predict: windows that reach one are counted and left out of the probe's means.
GLITCH_M = 1.0


def _probe_err(model: WorldModel, pred: np.ndarray, real: np.ndarray) -> np.ndarray:
    """Euclidean error over the probe dims (metres for positions) -> [N]."""
    dims = model.cfg.probe_dims
    return np.linalg.norm(pred[..., dims] - real[..., dims], axis=-1)


def _sane(model: WorldModel, *states: np.ndarray) -> np.ndarray:
    dims = model.cfg.probe_dims
    return np.all([np.abs(s[..., dims]).max(-1) < GLITCH_M for s in states], axis=0)


@torch.no_grad()
def k_step_errors(model: WorldModel, data: EpisodeData, ks: tuple[int, ...] = K_STEPS) -> dict[str, Any]:
    c = model.cfg.chunk
    out: dict[str, Any] = {}
    imgs = None if data.images is None else torch.from_numpy(data.images)
    for k in ks:
        lat, lat_copy, probe, probe_copy = [], [], [], []
        glitches = 0
        for e in range(len(data)):
            s, n = int(data.starts[e]), int(data.lengths[e])
            t0 = np.arange(0, n - k * c, c)  # starts whose k-th chunk ends inside the episode
            if len(t0) == 0:
                continue
            g0, g1 = s + t0, s + t0 + k * c
            st = torch.from_numpy(data.state)
            z0 = model.encode(st[g0], None if imgs is None else imgs[g0])
            z1 = model.encode(st[g1], None if imgs is None else imgs[g1])
            acts = torch.from_numpy(np.stack([data.action[g:g + k * c] for g in g0])).reshape(len(g0), k, c, -1)
            zk = model.unroll(z0, acts)[:, :, -1]  # [E, N, L]
            lat.append(((zk.mean(0) - z1) ** 2).mean(-1).numpy())
            lat_copy.append(((z0 - z1) ** 2).mean(-1).numpy())
            if model.cfg.probe_dims:
                pred_state = model.state(zk).mean(0).numpy()
                ok = _sane(model, data.state[g0], data.state[g1])
                glitches += int((~ok).sum())
                probe.append(_probe_err(model, pred_state, data.state[g1])[ok])
                probe_copy.append(_probe_err(model, data.state[g0], data.state[g1])[ok])
        if not lat:
            continue
        row = {"n": int(sum(len(x) for x in lat)), "latent_mse": float(np.concatenate(lat).mean()),
               "copy_last_latent_mse": float(np.concatenate(lat_copy).mean())}
        if probe:
            pe, ce = np.concatenate(probe), np.concatenate(probe_copy)
            row.update(probe_err_m=float(pe.mean()), copy_last_err_m=float(ce.mean()),
                       probe_err_median_m=float(np.median(pe)), copy_last_err_median_m=float(np.median(ce)),
                       glitch_windows=glitches)
        out[str(k)] = row
    return out


@torch.no_grad()
def one_step_success(model: WorldModel, data: EpisodeData, e: int) -> tuple[np.ndarray, np.ndarray]:
    """Episode e's predicted success of each chunk, one model step from every chunk-aligned real
    state with the logged actions, and whether the task really succeeded in that chunk."""
    c = model.cfg.chunk
    s, n = int(data.starts[e]), int(data.lengths[e])
    t0 = np.arange(0, n, c)
    g0 = s + t0
    idx = np.minimum(g0[:, None] + np.arange(c)[None], s + n - 1)
    valid = (t0[:, None] + np.arange(c)[None]) < n
    imgs = None if data.images is None else torch.from_numpy(data.images[g0])
    z1 = model.next(model.encode(torch.from_numpy(data.state[g0]), imgs), torch.from_numpy(data.action[idx]))
    return torch.sigmoid(model.success_logit(z1)).mean(0).numpy(), (data.reward[idx] * valid).max(1) > 0.5


def chunk_success(model: WorldModel, data: EpisodeData) -> dict[str, float]:
    """Per-chunk success prediction one step from every chunk-aligned real state."""
    probs, labels = zip(*(one_step_success(model, data, e) for e in range(len(data))), strict=True)
    p, y = np.concatenate(probs), np.concatenate(labels)
    return {"auroc": auroc(p, y), "ece": ece(p, y), "n": len(p), "positives": int(y.sum())}


def first_frames(data: EpisodeData) -> StartStates:
    s = data.starts
    return StartStates(data.state[s], None if data.images is None else data.images[s], list(data.instructions),
                       np.arange(len(data)), np.zeros(len(data), np.int64), data.success.copy())


def episode_actions(data: EpisodeData) -> list[np.ndarray]:
    return [data.action[s:s + n] for s, n in zip(data.starts, data.lengths, strict=True)]


def replay_success(model: WorldModel, data: EpisodeData, actions: list[np.ndarray]) -> np.ndarray:
    """Imagined success probability (max over chunks) of replaying `actions` from each first frame."""
    env = ImaginedEnv(model, success_threshold=1.1)  # never stop early: score the whole sequence
    r = replay(env, first_frames(data), actions)
    return r["success_prob"].max(1)


def corruption_test(model: WorldModel, data: EpisodeData, seed: int = 0, noise: float = 0.5) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    logged = episode_actions(data)
    perm = np.roll(np.arange(len(data)), 1)  # another episode's actions (a different scene)
    shuffled = [logged[j] for j in perm]
    noised = [np.clip(a + rng.normal(0, noise, a.shape), -1, 1).astype(np.float32) for a in logged]
    succ = data.success
    out = {}
    for name, acts in (("logged", logged), ("shuffled", shuffled), ("noised", noised)):
        p = replay_success(model, data, acts)
        out[f"{name}_success_prob"] = float(p[succ].mean()) if succ.any() else float("nan")
    out["drop_shuffled"] = out["logged_success_prob"] - out["shuffled_success_prob"]
    out["drop_noised"] = out["logged_success_prob"] - out["noised_success_prob"]
    return out


def trajectory_plot(model: WorldModel, data: EpisodeData, path: str | Path, n: int = 4) -> None:
    """Real vs imagined (replayed logged actions) probe trajectories of the first n episodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = model.cfg.probe_dims or list(range(min(3, model.cfg.state_dim)))
    n = min(n, len(data))
    sub = EpisodeData(data.state, data.action, data.reward, data.images, data.starts[:n], data.lengths[:n],
                      data.success[:n], data.takeover[:n], data.task, data.instructions[:n])
    r = replay(ImaginedEnv(model, success_threshold=1.1), first_frames(sub), episode_actions(sub))
    c = model.cfg.chunk
    fig, axes = plt.subplots(2, n, figsize=(4 * n, 6), squeeze=False)
    for i in range(n):
        s, length = int(sub.starts[i]), int(sub.lengths[i])
        t_real = np.arange(length)
        k = int(r["alive"][i].sum())
        t_im = np.arange(k + 1) * c
        ax = axes[0, i]
        for j, d in enumerate(dims):
            color = f"C{j}"
            ax.plot(t_real, data.state[s:s + length, d], color=color, label=f"real dim {d}")
            ax.plot(t_im, r["states"][i, : k + 1, d], "--o", ms=3, color=color, label=f"imagined dim {d}")
        ax.set_title(f"episode {i} ({'success' if sub.success[i] else 'failure'})")
        ax.set_xlabel("step")
        if i == 0:
            ax.set_ylabel("probe (m)")
            ax.legend(fontsize=6)
        ax = axes[1, i]
        ax.plot(t_im[1:], r["success_prob"][i, :k], "-o", ms=3, label="p(success)")
        ax.plot(t_im[1:], r["disagreement"][i, :k] / max(1e-9, r["disagreement"].max()), label="disagreement (rel.)")
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("step")
        if i == 0:
            ax.legend(fontsize=6)
    fig.suptitle("world model: real (solid) vs imagined from the first frame with the logged actions (dashed)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def evaluate(model: WorldModel, data: EpisodeData, out_dir: str | Path | None = None) -> dict[str, Any]:
    """Every validation figure on `data` (held-out episodes); the PNG goes to out_dir."""
    p_ep = replay_success(model, data, episode_actions(data))
    res: dict[str, Any] = {"episodes": len(data), "successes": int(data.success.sum()),
                           "k_step": k_step_errors(model, data), "chunk_success": chunk_success(model, data),
                           "episode_success": {"auroc": auroc(p_ep, data.success), "ece": ece(p_ep, data.success)},
                           "corruption": corruption_test(model, data)}
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        trajectory_plot(model, data, Path(out_dir) / "trajectories.png")
        res["plot"] = str(Path(out_dir) / "trajectories.png")
    return res
