"""Device job (`JOB=job_mw.py bash tools/device/run.sh`, carrying .whl with metaworld's wheel, .gl and
.dev): the Meta-World MT10 recipe with a third camera, trained on the GPU and evaluated on the
machine's CPUs. 100 expert demos a task recorded from corner2 + behindGripper + topview (EGL), the
tiny VLA with FiLM and centred instruction embeddings on the successful demos, 10,000 steps at batch
64 (as on the CPU; bf16 autocast there), then 30 held-out seeds (1000-1029) a task with the true
instruction, the ten tasks side by side.

Phases run against deadlines (seconds since the job started); results land in $OUT as they exist:
job.log, collect/train logs, mw_evals.tar (each task's summary.json), mw_ckpt.tar (the last
checkpoint without its optimizer state). JOB_* variables set the sizes; a dry run here:
JOB_DEVICE=cpu JOB_DEMOS=2 JOB_STEPS=2 JOB_EVAL_EPISODES=1 JOB_WORKERS=2 SKIP_WHL=1 MUJOCO_GL=osmesa
PYOPENGL_PLATFORM=osmesa JOB=job_mw.py bash tools/device/run.sh."""
import json
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import OUT, elapsed, log, main_logged, run, run_side_by_side, tail, vla  # this folder, not a package

WORK = Path("/tmp/job/mw")
CAMERAS = os.environ.get("JOB_CAMERAS", "corner2,behindGripper,topview")
DEMOS = int(os.environ.get("JOB_DEMOS", 100))
STEPS = int(os.environ.get("JOB_STEPS", 10000))
SEED = int(os.environ.get("JOB_SEED", 1))
WORKERS = int(os.environ.get("JOB_WORKERS", 14))
EVAL_EPISODES = int(os.environ.get("JOB_EVAL_EPISODES", 30))
COLLECT_END = float(os.environ.get("JOB_COLLECT_END", 200))
TRAIN_END = float(os.environ.get("JOB_TRAIN_END", 470))
EVAL_END = float(os.environ.get("JOB_EVAL_END", 585))
# the tasks whose failures run the whole 500 steps get two workers
SLOW = ("mw_reach", "mw_push", "mw_pick_place", "mw_peg_insert_side")


def collect(tasks: list[str], store: Path) -> bool:
    for task in tasks:
        dest = WORK / "collect" / task
        if (dest / "summary.json").exists():
            continue
        rc = run(vla("sim", "collect", store, f"task={task}", f"episodes={DEMOS}", "seed_start=0",
                     f"workers={WORKERS}", "videos=0", f"cameras=[{CAMERAS}]", "image_size=84", f"out_dir={dest}"),
                 OUT / f"collect_{task}.log", COLLECT_END - elapsed())
        if rc != 0:
            log(f"collect {task} failed:\n" + tail(OUT / f"collect_{task}.log", 20))
            return False
    return True


def evaluate(tasks: list[str], ck: Path) -> dict[str, float | None]:
    each, spare = divmod(WORKERS, len(tasks))
    jobs = {}
    for task in tasks:
        workers = max(1, each) + (1 if task in SLOW[:spare] else 0)
        dest = WORK / "eval" / task / "true"
        jobs[task] = (vla("eval", ck, f"task={task}", f"episodes={EVAL_EPISODES}", "seed_start=1000",
                          f"workers={workers}", "videos=0", f"cameras=[{CAMERAS}]", "instruction=''",
                          "n_action_steps=4", f"out_dir={dest}"), dest, OUT / f"eval_{task}.log")
    results = run_side_by_side(jobs, EVAL_END)
    with tarfile.open(OUT / "mw_evals.tar", "w") as tf:
        tf.add(WORK / "eval", arcname="eval")
    return results


def main() -> None:
    import torch

    from sim.tasks.metaworld_tasks import MT10, task_name

    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.cuda.is_available()} "
        f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else ''}, cpus {os.cpu_count()}")
    WORK.mkdir(parents=True, exist_ok=True)
    tasks = [task_name(t) for t in MT10]
    store = WORK / "demos.zarr"
    if not collect(tasks, store):
        return
    log(f"collected {DEMOS} demos x {len(tasks)} tasks")
    run_dir = WORK / "train"
    t = time.time()
    rc = run(vla("train", store, "--out", run_dir, "--resume", f"train.steps={STEPS}", "train.batch_size=64",
                 "train.ckpt_every=1000", "train.val_every=1000", "train.progress=false", "train.num_workers=8",
                 f"train.device={os.environ.get('JOB_DEVICE', 'cuda')}", f"train.seed={SEED}",
                 "policy.language_norm=true", "policy.language_film=true", "data.success_only=true",
                 f"policy.cameras=[{CAMERAS}]"), OUT / "train.log", TRAIN_END - elapsed())
    ckpts = sorted((run_dir / "checkpoints").glob("step_*"))
    log(f"train rc={rc} in {time.time() - t:.0f} s; checkpoints {[c.name for c in ckpts]}")
    if not ckpts:
        log("train failed:\n" + tail(OUT / "train.log", 30))
        return
    ck = ckpts[-1]
    with tarfile.open(OUT / "mw_ckpt.tar", "w") as tf:
        for f in ck.iterdir():
            if f.name not in ("optimizer.safetensors", "onnx"):
                tf.add(f, arcname=f"{ck.name}/{f.name}")
        for f in (run_dir / "tb").rglob("*"):
            tf.add(f, arcname=f"tb/{f.relative_to(run_dir / 'tb')}", recursive=False)
    # JOB_EVAL_TASKS=slow: only the tasks that need the objects' positions (the others score 0.97-1.00 in
    # every run so far; they can be evaluated afterwards from mw_ckpt.tar)
    results = evaluate([t for t in tasks if t in SLOW] if os.environ.get("JOB_EVAL_TASKS") == "slow" else tasks, ck)
    done = [v for v in results.values() if v is not None]
    log(json.dumps({"checkpoint": ck.name, "seed": SEED, "cameras": CAMERAS, **results,
                    "mean": sum(done) / len(done) if done else None}))
    shutil.rmtree(WORK / "eval", ignore_errors=True)


if __name__ == "__main__":
    main_logged(main)
