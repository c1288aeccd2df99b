"""Device job (`tools/device/run.sh`): the GPU tests, then the `sort` camera recipe (instruction
aliases, FiLM) trained on the GPU: 1,000 noisy-expert demos collected there (EGL), a 150-step probe
of the training rate, as many steps as fit the deadline, then the four instruction ablations on the
usual 50 held-out seeds.

Phases run against deadlines (seconds since the job started); every result lands in $OUT as soon as
it exists, so a late failure loses nothing earlier. JOB_* variables set the sizes (a dry run here:
JOB_DEVICE=cpu JOB_DEMOS=8 JOB_BATCH=8 JOB_EVAL_EPISODES=2 SKIP_WHL=1 MUJOCO_GL=osmesa)."""
import glob
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import OUT, T0, log, main_logged, run, run_side_by_side, tail, vla  # this folder, not a package

WORK = Path("/tmp/job")
WORK.mkdir(parents=True, exist_ok=True)
TRAIN_END = float(os.environ.get("JOB_TRAIN_END", 400))  # seconds after T0 by which training must end
EVAL_END = float(os.environ.get("JOB_EVAL_END", 500))
BATCH = int(os.environ.get("JOB_BATCH", 256))
LR = os.environ.get("JOB_LR", "3e-4")
DEMOS = int(os.environ.get("JOB_DEMOS", 1000))
WORKERS = int(os.environ.get("JOB_WORKERS", 14))
MAX_STEPS = int(os.environ.get("JOB_MAX_STEPS", 60000))
EVAL_EPISODES = int(os.environ.get("JOB_EVAL_EPISODES", 50))
# how an evaluation executes the policy: `job` is the main job's setting (every chunk from the prior's
# mean, the temporal ensemble at rate 0.3 with a chunk every 2 steps; vla/configs/job/default.yaml)
EVAL_SETTINGS = {"plain": (), "ns0": ("noise_scale=0",),
                 "job": ("noise_scale=0", "temporal_ensemble=0.3", "temporal_ensemble_every=2")}


def rate_from_tb(run_dir: Path) -> float | None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(glob.glob(str(run_dir / "tb" / "**" / "events.out.tfevents.*"), recursive=True))
    if not files:
        return None
    ea = EventAccumulator(str(Path(files[-1]).parent))
    ea.Reload()
    ev = ea.Scalars("train/loss")
    if len(ev) < 2:
        return None
    return (ev[-1].step - ev[0].step) / max(1e-6, ev[-1].wall_time - ev[0].wall_time)


def main() -> None:
    import torch

    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.cuda.is_available()} "
        f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else ''}, cpus {os.cpu_count()}")
    store = WORK / "sort" / "demos.zarr"
    # GPU tests in the background while the CPUs collect
    with open(OUT / "gpu_tests.log", "w") as f:
        tests = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                                  "tests/vla/train/test_trainer_gpu.py", "tests/vla/train/test_trainer.py"],
                                 stdout=f, stderr=subprocess.STDOUT)
    rc = run(vla("sim", "collect", store, "task=sort", f"episodes={DEMOS}", "seed_range=collect", "seed_offset=0",
                 f"workers={WORKERS}",
                 "videos=0", "cameras=[agentview,robot0_eye_in_hand]", "image_size=84", "noise=0.05", "label=clean",
                 f"out_dir={WORK / 'sort' / 'collect'}"), OUT / "collect.log", 150)
    if rc != 0:
        log("collect failed:\n" + tail(OUT / "collect.log", 30))
        tests.wait()
        return
    common = ["train.progress=false", f"train.batch_size={BATCH}", f"train.lr={LR}", "train.num_workers=6",
              f"train.device={os.environ.get('JOB_DEVICE', 'cuda')}", "policy.language_norm=true",
              "policy.language_film=true", "data.instruction_aliases=.dev/aliases.json"]
    probe = WORK / "sort" / "probe"
    t = time.time()
    rc = run(vla("train", store, "--out", probe, "train.steps=150", "train.log_every=25", "train.val_every=1000",
                 "train.ckpt_every=1000", *common), OUT / "probe.log", 150)
    overhead = time.time() - t
    rate = rate_from_tb(probe) if rc == 0 else None
    log(f"probe: {rate} steps/s, whole call {overhead:.0f} s")
    if not rate:
        log("probe failed:\n" + tail(OUT / "probe.log", 30))
        tests.wait()
        return
    budget = TRAIN_END - (time.time() - T0) - (overhead - 150 / rate) - 15
    steps = max(100, int(min(MAX_STEPS, rate * budget) // 500 * 500))
    log(f"training {steps} steps at batch {BATCH} (budget {budget:.0f} s)")
    run_dir = WORK / "sort" / "train_alias_gpu"
    rc = run(vla("train", store, "--out", run_dir, f"train.steps={steps}", "train.log_every=100",
                 f"train.val_every={max(500, steps // 4)}", f"train.ckpt_every={max(500, steps // 2)}",
                 "train.keep_checkpoints=0", *common), OUT / "train.log", TRAIN_END + 60 - (time.time() - T0))
    ckpts = sorted((run_dir / "checkpoints").glob("step_*"))
    for ck in ckpts[-2:]:  # one file per checkpoint (16 MiB a file comes back)
        with tarfile.open(OUT / f"sort_{ck.name}.tar", "w") as tf:
            for f in ck.iterdir():
                if f.name != "optimizer.safetensors":
                    tf.add(f, arcname=f"{ck.name}/{f.name}")
            if ck == ckpts[-1]:
                for f in (run_dir / "tb").rglob("*"):
                    tf.add(f, arcname=f"tb/{f.relative_to(run_dir / 'tb')}", recursive=False)
    log(f"train rc={rc}; checkpoints {[c.name for c in ckpts]}")
    tests.wait()
    log("gpu tests: " + tail(OUT / "gpu_tests.log", 3).replace("\n", " | "))
    if not ckpts:
        log("train failed:\n" + tail(OUT / "train.log", 30))
        return
    ck = ckpts[-1]
    ablations = {"true": "", "wrong": "@wrong", "heldout": "@heldout", "neutral": "do the task"}
    # JOB_EVALS: NAME:ABLATION:SETTING,... where SETTING is one of EVAL_SETTINGS (default: the four
    # ablations executed 4 steps a chunk at the checkpoint's noise)
    default = ",".join(f"{a}:{a}:plain" for a in ablations)
    specs = [e.split(":") for e in os.environ.get("JOB_EVALS", default).split(",")]
    per = max(1, WORKERS // len(specs))
    jobs = {}
    for name, ablation, setting in specs:
        dest = WORK / "sort" / "eval" / name
        jobs[name] = (vla("eval", ck, "task=sort", f"episodes={EVAL_EPISODES}", "seed_range=collect",
                          "seed_offset=1000", f"workers={per}",
                          "videos=0", f"instruction='{ablations[ablation]}'", "n_action_steps=4", f"out_dir={dest}",
                          *EVAL_SETTINGS[setting]), dest, WORK / f"eval_{name}.log")
    results = run_side_by_side(jobs, EVAL_END, tail_lines=10)
    with tarfile.open(OUT / "evals.tar", "w") as tf:
        tf.add(WORK / "sort" / "eval", arcname="eval")
    log(json.dumps({"steps": steps, "batch": BATCH, "rate": rate, **results}))


if __name__ == "__main__":
    main_logged(main)
