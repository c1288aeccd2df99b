"""Device job (`JOB=job_stack3.py MUJOCO_GL=disable bash tools/device/run.sh`, carrying `.whl` and `.dev`):
a base policy for stack3, the issue-15 task with none so far (the tiny state policy on 40-150 demos and up
to 6,000 CPU steps scored 0/50, `habc_notes.md`). stack3's demos (state mode, the expert at noise 0.1, as
`bench_habc.py prep` collects them) on the CPUs; several pretraining variants side by side on the GPU
(`JOB_VARIANTS`: name:preset:demos:steps:lr:noise_scale), every checkpoint evaluated in state mode on the
benchmark's evaluation seeds 100000+ side by side on the CPUs, with `bench_habc.py`'s evaluation command.
Back in $OUT: `stack3.json` (every checkpoint's success) and, per tiny variant, the checkpoint nearest the
issue's band (20-50%) as `<variant>_step_N.tar` (weights, EMA, config, statistics; no optimizer state),
so that the HABC / RaC runs start from it here: `bench_habc.py prep --task stack3` reads a base from
`candidates.json`.

A dry run here: JOB_DEVICE=cpu JOB_VARIANTS=t:tiny:4:20:3e-4:1 JOB_EVAL_EPISODES=2 SKIP_WHL=1
MUJOCO_GL=disable OUT=/tmp/out JOB=job_stack3.py bash tools/device/run.sh"""
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from common import OUT, elapsed, log, main_logged, run, run_side_by_side, side_by_side, tail, vla  # not packages
from harness import choose_base  # the benchmark's own rule for the base

WORK = Path("/tmp/job_stack3")
VARIANTS = [v.split(":") for v in os.environ.get(
    "JOB_VARIANTS", "t400:tiny:400:16000:3e-4:1,t400j:tiny:400:16000:1e-3:0,t150:tiny:150:16000:3e-4:1,"
                    "s400:small:400:10000:3e-4:1").split(",")]
EVAL_EPISODES = int(os.environ.get("JOB_EVAL_EPISODES", 50))
TRAIN_END = float(os.environ.get("JOB_TRAIN_END", 380))
EVAL_END = float(os.environ.get("JOB_EVAL_END", 520))
BAND = (0.2, 0.5)
STATE = ["obs_mode=state", "cameras=[]", "videos=0"]
CPUS = os.cpu_count() or 2


def collect(n: int) -> Path:
    store = WORK / f"demos_{n}.zarr"
    if not store.exists():  # bounded by the trainings' deadline: past it nothing could train on them
        run(vla("sim", "collect", store, f"episodes={n}", "seed_range=collect", "seed_offset=0",
                f"workers={max(1, CPUS - 2)}",
                "task=stack3", "noise=0.1", f"out_dir={WORK / f'collect_{n}'}", *STATE),
            OUT / f"collect_{n}.log", TRAIN_END - elapsed())
    return store


def main() -> None:
    import torch

    log(f"torch {torch.__version__}, cuda {torch.cuda.is_available()}, cpus {CPUS}; variants {VARIANTS}")
    WORK.mkdir(parents=True, exist_ok=True)
    stores = {n: collect(n) for n in sorted({int(v[2]) for v in VARIANTS})}
    trainings = {}
    for name, preset, demos, steps, lr, ns in VARIANTS:
        out = WORK / f"train_{name}"
        shutil.rmtree(out, ignore_errors=True)
        trainings[name] = (vla("train", stores[int(demos)], "--out", out, "--policy", preset, "--train", "default",
                               f"train.steps={steps}", "train.batch_size=64", f"train.lr={lr}",
                               f"policy.noise_scale={ns}", "train.warmup_steps=100",
                               f"train.ckpt_every={max(1, int(steps) // 4)}", "train.keep_checkpoints=0",
                               "train.progress=false", "train.val_every=100000", "train.num_workers=1",
                               f"train.device={os.environ.get('JOB_DEVICE', 'cuda')}"), OUT / f"train_{name}.log")
    if os.environ.get("JOB_DEVICE", "cuda") == "cuda":  # the CUDA path of the trainer, beside the trainings
        trainings["gpu_tests"] = ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                   "tests/vla/train/test_trainer_gpu.py"], OUT / "gpu_tests.log")
    for name, rc in side_by_side(trainings, TRAIN_END).items():
        log(f"{name}: rc={rc}\n" + tail(trainings[name][1], 2))
    ckpts = [(name, c) for name, *_ in VARIANTS
             for c in sorted((WORK / f"train_{name}" / "checkpoints").glob("step_*"))]
    per = max(1, CPUS // max(1, len(ckpts)))
    jobs = {f"{name}_{c.name}": (vla("eval", c, "task=stack3", f"episodes={EVAL_EPISODES}", "seed_range=collect",
                                     "seed_offset=100000",
                                     f"workers={per}", f"out_dir={WORK / 'eval' / f'{name}_{c.name}'}", *STATE),
                                 WORK / "eval" / f"{name}_{c.name}", WORK / f"eval_{name}_{c.name}.log")
            for (name, c) in ckpts}
    (WORK / "eval").mkdir(exist_ok=True)
    results = run_side_by_side(jobs, EVAL_END)
    table = {name: {c.name: results.get(f"{name}_{c.name}") for (n, c) in ckpts if n == name}
             for name, *_ in VARIANTS}
    (OUT / "stack3.json").write_text(json.dumps({"variants": [dict(zip(
        ("name", "preset", "demos", "steps", "lr", "noise_scale"), v, strict=True)) for v in VARIANTS],
        "eval_episodes": EVAL_EPISODES, "success": table}, indent=1))
    for name, preset, *_ in VARIANTS:
        scored = {k: v for k, v in table[name].items() if v is not None}
        if preset != "tiny" or not scored:
            continue
        pick = choose_base(scored, BAND)
        src = WORK / f"train_{name}" / "checkpoints" / pick
        with tarfile.open(OUT / f"{name}_{pick}.tar", "w") as t:
            for f in src.iterdir():
                if f.name != "optimizer.safetensors":
                    t.add(f, arcname=f"{name}_{pick}/{f.name}")
        log(f"{name}: returned {pick} ({scored[pick]})")
    log(json.dumps(table))


if __name__ == "__main__":
    main_logged(main)
