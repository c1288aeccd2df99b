"""Device job (`JOB=job_robust.py bash tools/device/run.sh`, carrying `.whl`, `.gl` and `.dev`): training that
expects a real arm's errors (issue 61), read on the `tune` seeds. Per variant, pick_place demos collected on
the CPUs (EGL) with the variant's domain randomisation (`randomize=SPEC`, vla.perturb), every (variant, training
seed) trained side by side on the GPU with the main job's pretraining recipe (tiny, batch 32, lr 1e-3, noise
scale 0), and each checkpoint evaluated as soon as its training ends, under each of the variant's conditions
(`perturb=SPEC`) on 200 `tune` seeds with the job's execution (temporal ensemble 0.3, a chunk every 2 steps).

Back in $OUT: job.log, results.json ({variant_sSEED: {condition: {success_rate, seeds: {seed: 0/1}}}}, the
trainings' last log lines) and `ckpt_<variant>_s<seed>.tar` (the final checkpoint without its optimizer state,
written when its training ends) for the variants in JOB_KEEP. An image policy's preset condition leaves out the
object-pose kinds, as bench_robustness does. JOB_VARIANTS (JSON) replaces the default list below. A dry run here:
JOB_DEVICE=cpu JOB_SCALE=0.01 JOB_EVAL_EPISODES=2 SKIP_WHL=1 MUJOCO_GL=osmesa JOB=job_robust.py \
bash tools/device/run.sh"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import OUT, elapsed, log, main_logged, tail, vla  # this folder, not a package

WORK = Path("/tmp/job_robust")
DEFAULT = [
    {"name": "s_base", "mode": "state", "demos": 40, "steps": 3000, "randomize": "none", "seeds": [1, 2]},
    {"name": "s_rand", "mode": "state", "demos": 40, "steps": 3000, "randomize": "realistic", "seeds": [1, 2]},
    {"name": "i_rand", "mode": "image", "demos": 400, "steps": 7000, "randomize": "realistic", "seeds": [1],
     "conditions": ["none", "realistic", "camera_shift:10"]},
    {"name": "i_rand_shift", "mode": "image", "demos": 400, "steps": 7000, "randomize": "realistic", "seeds": [1],
     "overrides": ["policy.augment_shift=4"], "demos_from": "i_rand",
     "conditions": ["none", "realistic", "camera_shift:10"]},
]
VARIANTS = json.loads(os.environ["JOB_VARIANTS"]) if os.environ.get("JOB_VARIANTS") else DEFAULT
CONDITIONS = os.environ.get("JOB_CONDITIONS", "none,realistic").split(",")
KEEP = set(os.environ.get("JOB_KEEP", "i_rand,i_rand_shift").split(","))
SCALE = float(os.environ.get("JOB_SCALE", 1.0))  # a dry run's fraction of demos and steps
EVAL_EPISODES = int(os.environ.get("JOB_EVAL_EPISODES", 200))
COLLECT_END = float(os.environ.get("JOB_COLLECT_END", 150))
TRAIN_END = float(os.environ.get("JOB_TRAIN_END", 440))
EVAL_END = float(os.environ.get("JOB_EVAL_END", 555))
CPUS = os.cpu_count() or 2
EXECUTION = ["temporal_ensemble=0.3", "temporal_ensemble_every=2", "n_action_steps=4"]


def collect() -> dict[str, Path]:
    """Each distinct demo set at once, the CPUs shared by their size; name -> its store (the ones that exist)."""
    own = [v for v in VARIANTS if not v.get("demos_from")]
    total = sum(v["demos"] for v in own)
    procs = {}
    for v in own:
        n = max(1, round(v["demos"] * SCALE))
        store = WORK / v["name"] / "demos.zarr"
        shutil.rmtree(store.parent, ignore_errors=True)
        store.parent.mkdir(parents=True)
        workers = max(1, round((CPUS - 1) * v["demos"] / total))
        cmd = vla("sim", "collect", store, "task=pick_place", f"episodes={n}", "seed_range=collect",
                  f"workers={workers}", "videos=0", "image_size=84", f"obs_mode={v['mode']}",
                  f"randomize={v['randomize']}",
                  f"out_dir={WORK / v['name'] / 'collect'}")
        procs[v["name"]] = subprocess.Popen(cmd, stdout=open(WORK / f"collect_{v['name']}.log", "w"),  # noqa: SIM115
                                            stderr=subprocess.STDOUT)
    stores = {}
    for name, p in procs.items():
        try:
            rc = p.wait(timeout=max(5.0, COLLECT_END - elapsed()))
        except subprocess.TimeoutExpired:
            p.kill()
            rc = -9
        log(f"collect {name}: rc={rc}\n" + tail(WORK / f"collect_{name}.log", 3))
        if rc == 0:
            stores[name] = WORK / name / "demos.zarr"
    return {v["name"]: stores[v.get("demos_from", v["name"])] for v in VARIANTS
            if v.get("demos_from", v["name"]) in stores}


def condition(v: dict, cond: str) -> str:
    """A preset for an image policy without the object-pose kinds, as bench_robustness evaluates it."""
    from vla.perturb import KINDS, load_presets, spec_text

    presets = load_presets()
    if v["mode"] == "image" and cond in presets:
        return spec_text({k: s for k, s in presets[cond].items() if KINDS[k].group != "pose"})
    return cond


def keep(key: str, ck: Path) -> None:
    with tarfile.open(OUT / f"ckpt_{key}.tar", "w") as tar:
        for f in ck.iterdir():
            if f.name != "optimizer.safetensors":
                tar.add(f, arcname=f"{ck.name}/{f.name}")


def train_cmd(v: dict, seed: int, store: Path, out: Path, loaders: int) -> list[str]:
    steps = max(2, round(v["steps"] * SCALE))
    return vla("train", store, "--out", out, "--policy", "tiny", "train.progress=false", f"train.steps={steps}",
               "train.batch_size=32", "train.lr=1e-3", "policy.noise_scale=0", f"train.seed={seed}",
               f"train.ckpt_every={max(1, steps // 7)}", "train.keep_checkpoints=1",
               f"train.val_every={max(1, steps // 4)}",
               f"train.num_workers={loaders}", f"train.device={os.environ.get('JOB_DEVICE', 'cuda')}",
               *v.get("overrides", []))


def main() -> None:
    import torch

    log(f"torch {torch.__version__}, cuda {torch.cuda.is_available()}, cpus {CPUS}; variants "
        f"{[v['name'] for v in VARIANTS]}, conditions {CONDITIONS}")
    WORK.mkdir(parents=True, exist_ok=True)
    stores = collect()
    runs = [(v, s) for v in VARIANTS if v["name"] in stores for s in v["seeds"]]
    loaders = max(1, (CPUS - len(runs)) // max(1, 2 * len(runs)))
    training: dict[str, tuple[subprocess.Popen, dict, int]] = {}
    for v, seed in runs:
        key, out = f"{v['name']}_s{seed}", WORK / v["name"] / f"train_s{seed}"
        shutil.rmtree(out, ignore_errors=True)
        training[key] = (subprocess.Popen(train_cmd(v, seed, stores[v["name"]], out, loaders),
                                          stdout=open(WORK / f"train_{key}.log", "w"),  # noqa: SIM115
                                          stderr=subprocess.STDOUT), v, seed)
    evals: dict[tuple[str, str], tuple[subprocess.Popen, Path]] = {}
    results: dict = {"recipe": {"variants": VARIANTS, "conditions": CONDITIONS, "eval": EXECUTION,
                                "seeds": f"tune range, {EVAL_EPISODES}"}, "runs": {}}
    while training or evals:
        for key, (p, v, seed) in list(training.items()):
            late = elapsed() > TRAIN_END
            if p.poll() is None and not late:
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
            del training[key]
            ckpts = sorted((WORK / v["name"] / f"train_s{seed}" / "checkpoints").glob("step_*"))
            log(f"train {key}: rc={p.returncode}{' (killed at the deadline)' if late else ''}, "
                f"{ckpts[-1].name if ckpts else 'no checkpoint'}\n" + tail(WORK / f"train_{key}.log", 2))
            results["runs"][key] = {"train_tail": tail(WORK / f"train_{key}.log", 3),
                                    "checkpoint": ckpts[-1].name if ckpts else None, "finished": not late}
            if not ckpts:
                continue
            if v["name"] in KEEP:
                keep(key, ckpts[-1])
            conds = v.get("conditions", CONDITIONS)
            busy = len(training) + len(evals) + len(conds)
            workers = max(2, min(8, (CPUS - len(training)) // max(1, busy - len(training))))
            for cond in conds:
                dest = WORK / v["name"] / f"eval_s{seed}_{cond.replace(':', '_')}"
                cmd = vla("eval", ckpts[-1], "task=pick_place", f"episodes={EVAL_EPISODES}", "seed_range=tune",
                          f"workers={workers}", "videos=0", f"perturb={condition(v, cond)}", *EXECUTION,
                          f"out_dir={dest}")
                evals[(key, cond)] = (subprocess.Popen(cmd, stdout=open(WORK / f"eval_{key}_{cond}.log", "w"),  # noqa: SIM115
                                                       stderr=subprocess.STDOUT), dest)
        for (key, cond), (p, dest) in list(evals.items()):
            if p.poll() is None and elapsed() < EVAL_END:
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
            del evals[(key, cond)]
            s = dest / "summary.json"
            if s.exists():
                d = json.loads(s.read_text())
                seeds = {str(e["seed"]): int(e["success"]) for e in d["episodes_detail"]}
                results["runs"][key][cond] = {"success_rate": d["success_rate"], "seeds": seeds}
                log(f"eval {key} {cond}: {d['success_rate']:.3f}")
            else:
                log(f"eval {key} {cond}: none\n" + tail(WORK / f"eval_{key}_{cond}.log", 4))
            (OUT / "results.json").write_text(json.dumps(results))
        time.sleep(2)
    (OUT / "results.json").write_text(json.dumps(results))
    log("done")


if __name__ == "__main__":
    main_logged(main)
