"""What the benchmarks share: the repository root, the environment their subprocesses run with, and the
steps several benchmarks take (`vla eval` of a policy, one `vla refine` run, a base policy trained and
chosen by its success, a run folder's records). A script in benchmarks/ imports it as a sibling
(`from harness import ...`: a script's own folder is first on sys.path), never through sys.path edits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STATE_OBS = ("obs_mode=state", "cameras=[]")  # the benchmarks' default observations: state mode, no cameras
STATE = [*STATE_OBS, "videos=0"]


ROOT = Path(__file__).resolve().parents[1]
# One thread per process unless OMP_NUM_THREADS says otherwise: the benchmarks run several at once on two
# cores, but a training step alone on the machine should take both (sort's recipe on this machine: 3.6
# steps/s with OMP_NUM_THREADS=2 against 2.1 with 1). Evaluation workers set their own (sim.evaluate).
ENV = {"OMP_NUM_THREADS": "1", **os.environ, "HF_HUB_OFFLINE": "1"}


def job_runtime(job: Path) -> str:
    """A finished main job's eval.runtime (torch for a job from before the option, or without job.json)."""
    config = job / "job.json"
    return json.loads(config.read_text())["eval"].get("runtime", "torch") if config.exists() else "torch"


def job_eval(job: Path) -> Path:
    """A finished main job's evaluation of its pretrained policy on all the eval seeds: `eval_<eval.runtime>`
    (the other runtime's folder holds only its check)."""
    return job / f"eval_{job_runtime(job)}"


def vla(*args: object) -> list[str]:
    return [sys.executable, "-m", "vla.cli", *map(str, args)]


def sh(cmd: list[str], log: Path) -> None:
    """Run a step of a benchmark, its output to `log`, its time on stdout."""
    log.parent.mkdir(parents=True, exist_ok=True)
    t = time.time()
    with open(log, "w") as f:
        subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, env=ENV, cwd=ROOT)
    print(f"[{time.strftime('%H:%M:%S')}] {log.stem}: {time.time() - t:.0f} s", flush=True)


def evaluate(policy: str, out_dir: Path, episodes: int, seed_start: int, task: str = "pick_place",
             obs: tuple[str, ...] = STATE_OBS, seed_range: str = "collect", record: Path | None = None
             ) -> dict[str, Any]:
    """`vla eval` of a policy spec on `task`, once: a finished summary is reused. `obs`: the observation and
    execution overrides (state mode by default; a camera run passes its own). `seed_start`: the first seed
    within `seed_range` (vla.protocol). `record`: an EpisodeStore the episodes are appended to."""
    if not (out_dir / "summary.json").exists():
        log = out_dir.parent / f"{out_dir.name}.log"
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as f:
            subprocess.run([sys.executable, "-m", "vla.cli", "eval", policy, f"task={task}", f"episodes={episodes}",
                            f"seed_range={seed_range}", f"seed_offset={seed_start}", "workers=2", "videos=0", *obs,
                            f"out_dir={out_dir}", *([f"record={record}"] if record else [])], check=True, env=ENV,
                           cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
    return json.loads((out_dir / "summary.json").read_text())


def refine_run(method: str, ckpt: str, demos: Path, run_dir: Path, log: Path, *, seed: int, collect_seed_start: int,
               iterations: int, episodes: int, eval_episodes: int, train_steps: int, method_args: dict | None = None,
               task: str = "pick_place", overrides: tuple[str, ...] = (),
               obs: tuple[str, ...] = STATE_OBS, eval_seed_range: str = "collect", eval_seed_offset: int = 100_000
               ) -> int:
    """One `vla refine METHOD` run of a refinement benchmark (resumable; `obs` as in `evaluate`); its exit
    code. It evaluates on `eval_seed_range` from `eval_seed_offset`: the collect seeds 100000+ that every
    benchmark used before the seed protocol unless the caller names `report`."""
    cmd = [sys.executable, "-m", "vla.cli", "refine", method, "--ckpt", ckpt, "--demos", str(demos), "--task",
           task, "--out", str(run_dir), "--resume", *obs, f"seed={seed}",
           f"collect_seed_offset={collect_seed_start}", f"iterations={iterations}",
           f"episodes_per_iteration={episodes}", f"eval_episodes={eval_episodes}", f"eval_seed_range={eval_seed_range}",
           f"eval_seed_offset={eval_seed_offset}",
           f"train.steps={train_steps}", f"train.ckpt_every={train_steps}", "train.batch_size=64",
           "train.warmup_steps=50", "train.progress=false", "train.val_every=1000000", "workers=2", "videos=0",
           *(["method_args=" + json.dumps(method_args)] if method_args else []), *overrides]
    log.parent.mkdir(parents=True, exist_ok=True)
    t = time.time()
    with open(log, "w") as f:
        code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=ENV, cwd=ROOT).returncode
    print(f"[{time.strftime('%H:%M:%S')}] {log.stem}: exit {code}, {time.time() - t:.0f} s", flush=True)
    return code


def choose_base(success: dict[str, float], band: tuple[float, float]) -> str:
    """The base among candidates (in training order) by success: the latest inside `band`, else the
    one closest to the band's middle."""
    in_band = [k for k, v in success.items() if band[0] <= v <= band[1]]
    return in_band[-1] if in_band else min(success, key=lambda k: abs(success[k] - sum(band) / 2))


def prep_base(inputs: Path, task: str, n: int, eval_episodes: int, band: tuple[float, float],
              steps: tuple[int, ...] = (1000, 2000, 3000), train_args: tuple[str, ...] = ()) -> dict[str, Any]:
    """A refinement benchmark's base policy on `task`, resumable: the first `n` expert demos (seeds
    0.., noise 0.1), a tiny policy trained on them for max(steps) (`train_args`: more `vla train`
    overrides), each of its checkpoints at `steps` evaluated on the seeds 100000+. The base is the
    latest checkpoint whose success lies in `band` (a base that starts there leaves room to improve
    and something to learn from), else the one closest to the band's middle;
    `inputs/candidates.json` holds them all and names it."""
    logs = inputs / "logs"
    store = inputs / f"demos_{n}.zarr"
    if not (inputs / f"demos_{n}.done").exists():
        sh(vla("sim", "collect", store, f"episodes={n}", "seed_range=collect", "seed_offset=0", "workers=2",
               f"task={task}", "noise=0.1",
               f"out_dir={inputs / ('collect_demos_' + str(n))}", *STATE), logs / f"collect_demos_{n}.log")
        (inputs / f"demos_{n}.done").touch()
    run = inputs / "pretrain" / f"d{n}"
    if not (run / "done").exists():
        sh(vla("train", store, "--out", run, "--policy", "tiny", "--train", "default", "--resume",
               f"train.steps={max(steps)}", "train.batch_size=64", "train.warmup_steps=100",
               f"train.ckpt_every={min(steps)}", "train.keep_checkpoints=0", "train.progress=false",
               "train.val_every=100000", *train_args), logs / "pretrain.log")
        (run / "done").touch()
    cands: dict[str, Any] = {}
    for step in steps:
        ckpt = run / "checkpoints" / f"step_{step:08d}"
        real = evaluate(str(ckpt), inputs / "eval" / f"d{n}_s{step}", eval_episodes, 100_000, task)["success_rate"]
        cands[f"d{n}_s{step}"] = {"ckpt": str(ckpt), "real_success": real}
        print(f"d{n}_s{step}: real success {real:.2f}", flush=True)
    table = {**cands, "base": choose_base({k: v["real_success"] for k, v in cands.items()}, band)}
    (inputs / "candidates.json").write_text(json.dumps(table, indent=1))
    return table


def read_runs(root: Path) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Each `refine_run`'s records under root/<method>/seed<s>/records.json, by method and seed."""
    rows: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for rec in sorted(root.glob("*/seed*/records.json")):
        rows.setdefault(rec.parts[-3], {})[int(rec.parts[-2][4:])] = json.loads(rec.read_text())
    return rows
