"""Perception pretraining from the simulator's privileged state: the policy's camera encoders learn
to regress where the task's object and goal are and how the object is turned, from frames of the
scripted expert's episodes, before imitation starts (`train.init_weights` loads the result).

Why: imitation gives the main job's camera policy a signal for the cube's yaw only in the 2-3 steps
a demo turns the hand, and its encoder drops the yaw (ridge R^2 <= 0 on its features,
`experiments/yaw_probe.py`) although the same encoder learns it from the pixels when asked (held-out
R^2 0.83, `main_job_notes.md`). A grasp turned 30+ degrees off slips five times as often.

Privileged information used only at training time, as in asymmetric actor-critic (Pinto et al.,
arXiv 1710.06542) and auxiliary perception tasks (UNREAL, Jaderberg et al., arXiv 1611.05397); ours
differs in that the labels first train the encoders on their own (a sim-labelled stand-in for the
pretrained backbone a real robot would load, which `policy.vision_backbone` also takes) and then stay
beside imitation as a co-training loss (`train.perception_frames`: alone, the first step is forgotten
within the pretraining), and that the targets respect the cube's symmetry: its yaw enters as
(cos 4y, sin 4y), the same for every face.

    python -m sim.vision_pretrain --task pick_place --episodes 1000 --steps 3000 \\
        --out runs/vision/vision.safetensors
    vla train DEMOS train.init_weights=runs/vision/vision.safetensors \
        train.perception_frames=runs/vision/vision.npz     # co-training: the encoders keep the yaw
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

TARGETS = ("object_x", "object_y", "object_z", "object_cos4yaw", "object_sin4yaw", "hand_object_cos4yaw",
           "hand_object_sin4yaw", "goal_x", "goal_y", "goal_z")


def perception_targets(env: Any) -> np.ndarray:
    """float32[10] (TARGETS) from the task's privileged state: the active object's position and yaw
    (world, and relative to the hand; mod 90 degrees as cos/sin of 4x the angle) and its goal."""
    from sim.intervener import hand_object_yaw, object_yaw, task_view

    yaw = object_yaw(env)
    if yaw is None:
        raise ValueError(f"{type(env).__name__}: privileged() names no object pose to learn")
    pos, goal, _ = task_view(env)
    rel = hand_object_yaw(env) or 0.0
    return np.array([*pos, np.cos(4 * yaw), np.sin(4 * yaw), np.cos(4 * rel), np.sin(4 * rel), *goal], np.float32)


def collect_frames(task: str, seeds: range, image_size: int, every: int = 4,
                   progress: bool = True) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Every `every`-th frame of the expert's episodes on `seeds`: images per camera uint8 [N, H, W, 3],
    targets float32 [N, 10] and each frame's episode index [N]."""
    from sim.policies import expert_action, make_expert
    from vla.progress import progress as tqdm
    from vla.registry import TASKS

    env = TASKS.make(task, image_size=image_size)
    expert = make_expert(env)
    images: dict[str, list[np.ndarray]] = {}
    targets, episode = [], []
    for i, seed in enumerate(tqdm(seeds, desc=f"{task} / frames", disable=not progress)):
        obs, info = env.reset(seed=seed)
        if hasattr(expert, "reset"):
            expert.reset(seed=seed)
        for t in range(10_000):
            if t % every == 0:
                for cam, im in obs["images"].items():
                    images.setdefault(cam, []).append(im)
                targets.append(perception_targets(env.unwrapped))
                episode.append(i)
            obs, _, terminated, truncated, info = env.step(expert_action(expert, obs, info))
            if terminated or truncated:
                break
    env.close()
    return {c: np.stack(v) for c, v in images.items()}, np.stack(targets), np.array(episode)


def r2_per_target(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Held-out coefficient of determination per column."""
    return 1.0 - ((target - pred) ** 2).sum(0) / np.maximum(((target - target.mean(0)) ** 2).sum(0), 1e-12)


def pretrain_encoders(policy_cfg: Any, images: dict[str, np.ndarray], targets: np.ndarray, episode: np.ndarray,
                      steps: int = 3000, batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
                      val_fraction: float = 0.1,
                      progress: bool = True) -> tuple[dict[str, Any], dict[str, Any], np.ndarray]:
    """The policy config's camera encoders plus a linear head trained to regress the standardised
    targets that vary from their tokens; returns (`vision.<camera>.*` and `perception_head.*` tensors,
    report with held-out R^2 per target on the last `val_fraction` of the episodes, the standardised
    targets [N, K] the head was trained on)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from vla.policy.encoders import VisionEncoder
    from vla.progress import progress as tqdm

    torch.manual_seed(seed)
    cams = list(policy_cfg.cameras)
    missing = [c for c in cams if c not in images]
    if missing:
        raise KeyError(f"the frames have no camera '{missing[0]}' (they have {sorted(images)})")
    n_val = max(1, round(float(episode.max()) * val_fraction))
    val = episode > episode.max() - n_val
    train_idx, val_idx = np.flatnonzero(~val), np.flatnonzero(val)
    mu, sd = targets[train_idx].mean(0), targets[train_idx].std(0)
    varies = sd > 1e-6  # a target constant in the task (the goal's height) is left out, not scaled up
    y = torch.from_numpy(((targets - mu) / np.where(varies, sd, 1.0))[:, varies]).float()
    # the policy normalises each camera by its data's per-channel mean and std (PolicyNormalizer.image)
    norm = {c: (torch.tensor(images[c][train_idx].reshape(-1, 3).mean(0), dtype=torch.float32),
                torch.tensor(images[c][train_idx].reshape(-1, 3).std(0) + 1e-6, dtype=torch.float32)) for c in cams}
    encoders = nn.ModuleDict({c: VisionEncoder(policy_cfg) for c in cams})
    # the policy's perception head (VLAModel.perception_head): the same layer, so co-training starts from it
    head = nn.Linear(len(cams) * policy_cfg.vision_tokens * policy_cfg.d_model, int(varies.sum()))
    opt = torch.optim.AdamW([*encoders.parameters(), *head.parameters()], lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.05)

    def forward(idx: np.ndarray) -> torch.Tensor:
        feats = []
        for c in cams:
            x = torch.from_numpy(images[c][idx]).permute(0, 3, 1, 2).float()
            if tuple(x.shape[-2:]) != tuple(policy_cfg.image_size):
                x = F.interpolate(x, size=policy_cfg.image_size, mode="bilinear", align_corners=False)
            mean, std = norm[c]
            feats.append(encoders[c]((x - mean[:, None, None]) / std[:, None, None]).flatten(1))
        return head(torch.cat(feats, 1))

    rng = np.random.default_rng(seed)
    losses = []
    for _ in tqdm(range(steps), desc="vision pretrain", disable=not progress):
        idx = rng.choice(train_idx, batch_size)
        loss = F.mse_loss(forward(idx), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        pred = torch.cat([forward(val_idx[i:i + 256]) for i in range(0, len(val_idx), 256)]).numpy()
    r2 = r2_per_target(pred, y[val_idx].numpy())
    tensors = {f"vision.{c}.{k}": v.detach().clone() for c in cams for k, v in encoders[c].state_dict().items()}
    tensors.update({f"perception_head.{k}": v.detach().clone() for k, v in head.state_dict().items()})
    report = {"frames": len(targets), "episodes": int(episode.max() + 1), "val_frames": len(val_idx),
              "steps": steps, "loss_first_last": [round(losses[0], 4), round(float(np.mean(losses[-50:])), 4)],
              "val_r2": {name: round(float(v), 3) for name, v in zip(np.array(TARGETS)[varies], r2, strict=True)},
              "targets": [t for t, ok in zip(TARGETS, varies, strict=True) if ok]}
    return tensors, report, y.numpy()


def run(task: str, episodes: int, out: str | Path, policy: str = "tiny", policy_overrides: list[str] | None = None,
        cameras: list[str] | None = None, image_size: int = 84, every: int = 4, steps: int = 3000,
        seed_offset: int = 500_000, seed: int = 0, progress: bool = True) -> dict[str, Any]:
    """Collect, pretrain, write `out` (safetensors: the encoders and the perception head), `out` with .npz
    (the labelled frames) and with .json (the report); returns the report.
    Seeds from offset 500000 of the protocol's collect range: apart from the job's demos (0..)."""
    from safetensors.torch import save_file

    from vla.config import load_config
    from vla.policy.config import PolicyConfig

    t0 = time.perf_counter()
    from vla.protocol import seeds

    images, targets, episode = collect_frames(task, seeds("collect", episodes, seed_offset), image_size, every,
                                              progress)
    cfg = load_config(PolicyConfig, "policy", policy, list(policy_overrides or []),
                      values={"cameras": list(cameras or sorted(images))})
    t1 = time.perf_counter()
    tensors, report, standardised = pretrain_encoders(cfg, images, targets, episode, steps=steps, seed=seed,
                                                      progress=progress)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out))
    # the labelled frames, for co-training the policy's perception head (train.perception_frames)
    np.savez(out.with_suffix(".npz"), targets=standardised,
             **{f"images/{c}": images[c] for c in cfg.cameras})
    report["frames_file"] = str(out.with_suffix(".npz"))
    report.update(task=task, cameras=cfg.cameras, image_size=list(cfg.image_size), weights=str(out),
                  collect_s=round(t1 - t0, 1), train_s=round(time.perf_counter() - t1, 1))
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--every", type=int, default=4, help="keep every N-th frame of an episode")
    ap.add_argument("--policy", default="tiny", help="policy preset whose encoders are trained")
    ap.add_argument("--override", action="append", default=[],
                    help="policy config KEY=VALUE, as `vla train`'s policy. overrides (e.g. image_size=[84,84])")
    ap.add_argument("--out", required=True, help="safetensors file for train.init_weights")
    args = ap.parse_args()
    report = run(args.task, args.episodes, args.out, args.policy, args.override, steps=args.steps, every=args.every)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
