"""Device job (`JOB=job_pp.py bash tools/device/run.sh`): the main job's pick_place pretraining for
several demo variants x training seeds at once, so that a change to the demos is read over training
seeds and not one draw. Per variant, 400 camera demos (seeds 0-399, agentview + wrist at 84x84, as
the job's `sim_demos`) collected on the CPUs (EGL); every (variant, seed) trained side by side on the
GPU with the job's recipe (7,000 steps, batch 32, lr 1e-3, noise scale 0); every checkpoint evaluated
on the job's 200 seeds 1000-1199, side by side on the CPUs. Each phase runs against a deadline and the
per-seed outcomes land in $OUT (`eval_<variant>_s<seed>.json`) as soon as they exist.

JOB_VARIANTS: `name:drop` pairs (the demos' `expert_drop`; 0 = the job's demos), JOB_SEEDS: training
seeds. A dry run here: JOB_DEVICE=cpu JOB_DEMOS=4 JOB_STEPS=20 JOB_EVAL_EPISODES=2 SKIP_WHL=1
MUJOCO_GL=osmesa JOB=job_pp.py bash tools/device/run.sh"""
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import OUT, log, main_logged, run_side_by_side, side_by_side, tail, vla  # this folder, not a package

WORK = Path("/tmp/job_pp")
VARIANTS = [(n, float(d)) for n, d in (v.split(":") for v in os.environ.get("JOB_VARIANTS", "base:0,drop:0.3")
                                                                    .split(","))]
SEEDS = [int(s) for s in os.environ.get("JOB_SEEDS", "1,2").split(",")]
DEMOS = int(os.environ.get("JOB_DEMOS", 400))
STEPS = int(os.environ.get("JOB_STEPS", 7000))
EVAL_EPISODES = int(os.environ.get("JOB_EVAL_EPISODES", 200))
COLLECT_END = float(os.environ.get("JOB_COLLECT_END", 120))
TRAIN_END = float(os.environ.get("JOB_TRAIN_END", 470))
EVAL_END = float(os.environ.get("JOB_EVAL_END", 570))
CPUS = os.cpu_count() or 2


def main() -> None:
    import torch

    log(f"torch {torch.__version__}, cuda {torch.cuda.is_available()}, cpus {CPUS}; variants {VARIANTS}, "
        f"seeds {SEEDS}, {STEPS} steps")
    WORK.mkdir(parents=True, exist_ok=True)
    per = max(1, (CPUS - 2) // len(VARIANTS))
    jobs = {}
    for name, drop in VARIANTS:
        store = WORK / name / "demos.zarr"
        shutil.rmtree(store, ignore_errors=True)
        extra = [f"expert_drop={drop}", "label=clean"] if drop > 0 else []
        jobs[name] = (vla("sim", "collect", store, "task=pick_place", f"episodes={DEMOS}", "seed_start=0",
                          f"workers={per}", "videos=0", "image_size=84", *extra,
                          f"out_dir={WORK / name / 'collect'}"), WORK / name / "collect", WORK / f"collect_{name}.log")
    collected = run_side_by_side(jobs, COLLECT_END)
    runs = [(name, seed) for name, _ in VARIANTS if collected.get(name) for seed in SEEDS]
    # side by side on the one GPU: the tiny model's step is loader-bound, so each gets its own workers
    loaders = max(1, (CPUS - len(runs)) // max(1, len(runs)))
    trainings = {}
    for name, seed in runs:
        out = WORK / name / f"train_s{seed}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = vla("train", WORK / name / "demos.zarr", "--out", out, "--policy", "tiny", "train.progress=false",
                  f"train.steps={STEPS}", "train.batch_size=32", "train.lr=1e-3", "policy.noise_scale=0",
                  f"train.seed={seed}", f"train.ckpt_every={max(1, STEPS // 7)}", "train.keep_checkpoints=1",
                  f"train.val_every={max(1, STEPS // 4)}", f"train.num_workers={loaders}",
                  f"train.device={os.environ.get('JOB_DEVICE', 'cuda')}")
        trainings[f"{name}_s{seed}"] = (cmd, OUT / f"train_{name}_s{seed}.log")
    for key, rc in side_by_side(trainings, TRAIN_END).items():
        log(f"train {key}: rc={rc}\n" + tail(OUT / f"train_{key}.log", 3))
    jobs, evaluated = {}, {}
    per = max(1, CPUS // max(1, len(runs)))
    for name, seed in runs:
        ckpts = sorted((WORK / name / f"train_s{seed}" / "checkpoints").glob("step_*"))
        if not ckpts:
            continue
        key, dest = f"{name}_s{seed}", WORK / name / f"eval_s{seed}"
        log(f"{key}: evaluating {ckpts[-1].name}")
        evaluated[key] = ckpts[-1]
        jobs[key] = (vla("eval", ckpts[-1], "task=pick_place", f"episodes={EVAL_EPISODES}", "seed_start=1000",
                         f"workers={per}", "videos=0", "n_action_steps=4", f"out_dir={dest}"),
                     dest, WORK / f"eval_{key}.log")
    results = run_side_by_side(jobs, EVAL_END)
    for key, (_, dest, _) in jobs.items():
        s = dest / "summary.json"
        if s.exists():
            d = json.loads(s.read_text())
            seeds = [{"seed": e["seed"], "success": e["success"]} for e in d["episodes_detail"]]
            (OUT / f"eval_{key}.json").write_text(json.dumps({"checkpoint": str(evaluated[key]),
                                                             "success_rate": d["success_rate"],
                                                             "episodes_detail": seeds}))
    log(json.dumps(results))


if __name__ == "__main__":
    main_logged(main)
