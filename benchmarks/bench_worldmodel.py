"""World-model benchmark: validation, policy ranking without the simulator, speed.

  python benchmarks/wm_candidates.py --out runs/bench_wm/inputs          # policies + real success
  python benchmarks/bench_worldmodel.py variants --out runs/bench_wm/run  # pick_place cameras, lift
  python benchmarks/bench_worldmodel.py state --inputs runs/bench_wm/inputs --out runs/bench_wm/run
  python benchmarks/bench_worldmodel.py report --out runs/bench_wm/run

Every step is skipped when its output exists, so a stopped run continues where it was.
- state (pick_place, state mode): the model trains on expert demos, failed expert attempts and
  rollouts of the candidate policies on seeds 5000+; it is validated on the candidates' held-out
  rollouts (seeds 100000+, never trained on) and ranks the candidates from the first frames of
  those held-out seeds, against their real success (50 simulator episodes each).
- variants: pick_place with a camera (the encoder sees the image and the proprio only, so the
  object-pose probe must read the cube from pixels) and robosuite lift (state mode); mixed-skill
  expert episodes, validated on a seeded held-out split.
- speed: imagined env steps/s (batched) against simulator steps/s on pick_place with cameras.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from harness import sh, vla


def collect(store: Path, task: str, episodes: int, seed: int, log: Path, *extra: str) -> None:
    done = store.with_suffix(".done")
    if not done.exists():
        sh(vla("sim", "collect", store, f"task={task}", f"episodes={episodes}", "seed_range=collect",
               f"seed_offset={seed}", "workers=2",
               "videos=0", f"out_dir={store.parent / ('collect_' + store.stem)}", "obs_mode=state", *extra), log)
        done.touch()


def train(stores: list[Path], out: Path, log: Path, *overrides: str) -> None:
    if not (out / "train_summary.json").exists():
        sh(vla("wm", "train", *stores, "--out", out, "--resume", "train.progress=false", *overrides), log)


def wm_eval(ckpt: Path, stores: list[Path], out: Path, log: Path) -> None:
    if not (out / "summary.json").exists():
        sh(vla("wm", "eval", ckpt, *[a for s in stores for a in ("--store", s)], "--out", out), log)


# ---- pick_place with a camera, and robosuite lift ---------------------------------------------------
def variants(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()
    logs = out / "logs"
    # Mixed skill, so the episodes hold successes, near misses and failures alike.
    mixes = [("expert", "noise=0.1", "skill=1.0"), ("fumble", "noise=0.3", "skill=0.6"),
             ("poor", "noise=0.4", "skill=0.3")]
    cams = ["cameras=[agentview]", "image_size=84"]
    for task, n, extra in (("pick_place", 40, cams), ("lift", 30, ["cameras=[]", "horizon=150"])):
        name = f"{task}_{'cams' if extra is cams else 'state'}"
        train_stores, val_stores = [], []
        for i, (mix, noise, skill) in enumerate(mixes):
            for split, seed0, count in (("train", 0, n), ("val", 100_000, max(8, n // 3))):
                store = out / "data" / name / f"{split}_{mix}.zarr"
                collect(store, task, count, seed0 + 1000 * i, logs / f"collect_{name}_{split}_{mix}.log", noise, skill,
                        *extra)
                (train_stores if split == "train" else val_stores).append(store)
        model = (["model.cameras=[agentview]", "model.state_inputs=9", "model.image_size=64", "model.horizon=3",
                  "train.batch_size=64", f"train.steps={args.cam_steps}"] if extra is cams
                 else [f"train.steps={args.steps}"])
        train(train_stores, out / f"wm_{name}", logs / f"train_{name}.log", *model)
        wm_eval(out / f"wm_{name}", val_stores, out / f"val_{name}", logs / f"val_{name}.log")


# ---- pick_place, state: validation and ranking ----------------------------------------------------------
def state(args: argparse.Namespace) -> None:
    inputs, out = Path(args.inputs).resolve(), Path(args.out).resolve()
    logs = out / "logs"
    cands = json.loads((inputs / "candidates.json").read_text())
    wm = out / "wm_pick_place_state"
    train([inputs / "demos.zarr", inputs / "expert_failures.zarr", inputs / "rollouts.zarr"], wm,
          logs / "train_pick_place_state.log", f"train.steps={args.steps}")
    heldout = [Path(c["heldout"]) for c in cands.values()]
    wm_eval(wm, heldout, out / "val_pick_place_state", logs / "val_pick_place_state.log")
    val_demos = out / "data" / "val_demos.zarr"
    collect(val_demos, "pick_place", 20, 100_000, logs / "collect_val_demos.log", "noise=0.1", "cameras=[]")
    if not (out / "rank.json").exists():
        sh(vla("wm", "rank", "--wm", wm, "--starts", heldout[0], "--candidates", inputs / "candidates.json",
               "--n-starts", args.starts, "--samples", args.samples, "--chunks", args.chunks, "--val-store", val_demos,
               "--out", out / "rank.json"), logs / "rank.log")
    if not (out / "speed.json").exists():
        (out / "speed.json").write_text(json.dumps(speed(wm, Path(next(iter(cands.values()))["ckpt"])), indent=1))


def speed(wm: Path, policy_ckpt: Path, sim_steps: int = 300, batch: int = 256, chunks: int = 10) -> dict[str, Any]:
    """Env steps per second: the simulator (one env, as the evaluator's workers run it) with the two
    84x84 cameras and without, against the imagined env (batched), each without the policy; and
    the imagined env with the policy sampling its chunks (batched)."""
    import numpy as np
    import torch

    import sim.tasks  # noqa: F401  (registers the tasks)
    from vla.registry import TASKS
    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.imagined_env import ImaginedEnv, rollout, start_states
    from worldmodel.rank import load_candidate

    torch.set_num_threads(1)
    out: dict[str, Any] = {"threads": 1}
    for label, kw in (("sim_cameras", {}), ("sim_state", {"cameras": ()})):
        env = TASKS.make("pick_place", obs_mode="state", **kw)
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        t = time.time()
        for _ in range(sim_steps):
            _, _, term, trunc, _ = env.step(rng.uniform(-1, 1, 7).astype(np.float32))
            if term or trunc:
                env.reset(seed=1)
        out[f"{label}_steps_per_s"] = sim_steps / (time.time() - t)
        env.close()
    model, job, _, _, _ = load_checkpoint(wm)
    starts = start_states(_first_store(wm), model)
    starts = starts.repeat(int(np.ceil(batch / len(starts))))
    env = ImaginedEnv(model, success_threshold=1.1, max_chunks=chunks)
    env.reset(starts)
    acts = np.random.default_rng(0).uniform(-1, 1, (len(starts), job.model.chunk, job.model.action_dim))
    t = time.time()
    for _ in range(chunks):
        env.step(acts.astype(np.float32))
    out["imagined_steps_per_s"] = chunks * job.model.chunk * len(starts) / (time.time() - t)
    out["imagined_batch"] = len(starts)
    policy = load_candidate(policy_ckpt)
    t = time.time()
    rollout(ImaginedEnv(model, success_threshold=1.1, max_chunks=chunks), policy, starts, chunks)
    out["imagined_with_policy_steps_per_s"] = chunks * job.model.chunk * len(starts) / (time.time() - t)
    out["speedup_vs_sim_cameras"] = out["imagined_steps_per_s"] / out["sim_cameras_steps_per_s"]
    out["speedup_with_policy_vs_sim_cameras"] = out["imagined_with_policy_steps_per_s"] / out["sim_cameras_steps_per_s"]
    return out


def _first_store(wm: Path) -> Path:
    from worldmodel.checkpoint import load_checkpoint

    return Path(load_checkpoint(wm)[2]["stores"][0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=["variants", "state", "report"])
    ap.add_argument("--inputs", default="runs/bench_wm/inputs")
    ap.add_argument("--out", default="runs/bench_wm/run")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--cam-steps", type=int, default=2000)
    ap.add_argument("--starts", type=int, default=50)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--chunks", type=int, default=25)
    args = ap.parse_args()
    if args.phase == "variants":
        variants(args)
    elif args.phase == "state":
        state(args)
    else:
        from wm_report import report  # benchmarks/ is this script's folder

        report(Path(args.out).resolve(), Path(args.inputs).resolve())


if __name__ == "__main__":
    main()
