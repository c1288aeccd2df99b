"""Is the cube's yaw in the camera policy's encoder features? (main_job_notes.md)

The main job's camera policy turns its hand uncorrelated with the cube's yaw and its grasps slip
when they are turned 30+ degrees off (`failure_modes.py`). This probe says where the yaw is lost:
ridge regression from the policy's camera tokens on the first frame of an episode (the frame the
expert's demos turn the hand in) to (cos 4d, sin 4d), d = the cube's yaw minus the hand's (a cube
looks the same every 90 degrees), fitted on some seeds, scored on others. Controls: the same
architecture with its initial random weights (what a random convolutional net keeps linearly), and
the cube's position, which the policy does use, as the same kind of target.

    python experiments/yaw_probe.py --ckpt runs/main26/train/checkpoints/step_00007000 \\
        --out experiments/results/yaw_probe.json [--turn-seeds 80]   # + does its first turn follow the yaw
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np


def ridge_r2(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
             alpha: float) -> np.ndarray:
    """Held-out R^2 per target column of ridge regression (features standardised on the train set)."""
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-6
    a, b = (x_train - mu) / sd, (x_test - mu) / sd
    ym = y_train.mean(0)
    w = np.linalg.solve(a.T @ a + alpha * np.eye(a.shape[1]), a.T @ (y_train - ym))
    pred = b @ w + ym
    return 1.0 - ((y_test - pred) ** 2).sum(0) / ((y_test - y_test.mean(0)) ** 2).sum(0)


def first_frames(task: str, seeds: range, image_size: int) -> tuple[list[Any], np.ndarray, np.ndarray]:
    from sim.intervener import hand_object_yaw
    from vla.registry import TASKS

    env = TASKS.make(task, image_size=image_size)
    obs_list, yaw, pos = [], [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        u = env.unwrapped
        p = u.privileged()
        d = hand_object_yaw(u)
        obs_list.append(obs)
        yaw.append([np.cos(4 * d), np.sin(4 * d)])
        pos.append(p["objects"][p["active_object"]]["pos"][:2])
    return obs_list, np.array(yaw), np.array(pos)


def camera_features(policy: Any, obs_list: list[Any]) -> np.ndarray:
    """The policy's camera tokens on each observation, flattened (proprio and language left out)."""
    import torch

    model = policy.model
    feats = []
    with torch.no_grad():
        for obs in obs_list:
            policy.reset()
            inputs = policy.history.push([obs])
            lang = torch.from_numpy(model.language.encode(inputs.instructions))
            tokens, _ = model.encode([torch.from_numpy(im) for im in inputs.images], torch.from_numpy(inputs.state),
                                     torch.from_numpy(inputs.obs_mask), lang)
            n_cam = model.cfg.vision_tokens * len(model.cfg.cameras) * model.cfg.n_obs_steps
            feats.append(tokens[0, -n_cam:].flatten().numpy())
    return np.array(feats)


def first_turn_correlation(policy: Any, task: str, seeds: range, image_size: int, steps: int = 4) -> float:
    """Pearson r between the yaw the policy's first chunk turns over its first `steps` actions (the
    rotation action about z, index 5) and the turn the cube needs (to its nearest face, +-45 degrees):
    does the policy act on the yaw it reads? The expert's first action gives 0.96."""
    from sim.intervener import face_offset, hand_object_yaw
    from vla.registry import TASKS

    env = TASKS.make(task, image_size=image_size)
    need, turn = [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        need.append(face_offset(hand_object_yaw(env.unwrapped)))
        policy.reset()
        turn.append(float(policy.sample_chunk([obs])[0][:steps, 5].sum()))
    env.close()
    return float(np.corrcoef(need, turn)[0, 1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--episodes", type=int, default=600, help="first frames of seeds 50000.. (3/4 fit, 1/4 scored)")
    ap.add_argument("--alphas", default="1,10,100,1000,10000",
                    help="ridge penalties; each target's best held-out R^2 over them is reported (the probe's "
                         "most favourable reading)")
    ap.add_argument("--image-size", type=int, default=84)
    ap.add_argument("--turn-seeds", type=int, default=0,
                    help="also: r of the first chunk's turn with the turn the cube needs, seeds 1000.. (the job's)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch

    from vla.policy.checkpoint import load_config
    from vla.policy.model import VLAModel
    from vla.policy.policy import TorchPolicy, load_torch_policy

    obs_list, yaw, pos = first_frames(args.task, range(50_000, 50_000 + args.episodes), args.image_size)
    n_fit = args.episodes * 3 // 4
    trained = load_torch_policy(args.ckpt)
    torch.manual_seed(0)
    fresh = VLAModel(load_config(Path(args.ckpt)))
    fresh.normalizer.load_state_dict(trained.model.normalizer.state_dict())  # the same input scaling
    if hasattr(fresh, "lang_mean"):
        fresh.lang_mean.copy_(trained.model.lang_mean)
        fresh.lang_scale.copy_(trained.model.lang_scale)
    untrained = TorchPolicy(fresh)
    alphas = [float(a) for a in args.alphas.split(",")]
    res: dict[str, Any] = {"checkpoint": args.ckpt, "episodes": args.episodes, "alphas": alphas}
    for name, pol in (("trained", trained), ("random_init", untrained)):
        f = camera_features(pol, obs_list)
        r2_yaw = np.max([ridge_r2(f[:n_fit], yaw[:n_fit], f[n_fit:], yaw[n_fit:], a) for a in alphas], axis=0)
        r2_pos = np.max([ridge_r2(f[:n_fit], pos[:n_fit], f[n_fit:], pos[n_fit:], a) for a in alphas], axis=0)
        res[name] = {"features": int(f.shape[1]), "r2_yaw_cos_sin": [round(float(v), 3) for v in r2_yaw],
                     "r2_cube_xy": [round(float(v), 3) for v in r2_pos]}
        print(name, res[name], flush=True)
    if args.turn_seeds:
        r = first_turn_correlation(trained, args.task, range(1000, 1000 + args.turn_seeds), args.image_size)
        res["first_turn_r"] = {"seeds": args.turn_seeds, "r": round(r, 3)}
        print("first turn r", res["first_turn_r"], flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
