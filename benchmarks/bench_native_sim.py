"""Speed of the native MuJoCo tasks: raw mj_step rate, control steps/s without and with cameras.

Run (one core for the software renderer, the per-core figure):
    LP_NUM_THREADS=1 python benchmarks/bench_native_sim.py
Writes benchmarks/results/native_sim.md (and prints it). Control steps are timed inside expert
episodes (env.step only, the expert's own time excluded), so contacts and grasps are included.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import mujoco
import numpy as np

import sim.render  # noqa: F401  (headless GL backend before mujoco loads)
from sim.experts.native import NativePickPlaceExpert
from sim.render import MultiCameraRenderer
from vla.registry import TASKS

RESULTS = Path(__file__).resolve().parent / "results" / "native_sim.md"


class Clock:
    """Wall time and this process's CPU time (all threads, the renderer's included). On a shared
    machine the CPU-time rate is the better estimate of what one quiet core would do."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Clock:
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


def best_of(repeats: int, fn, *args) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Highest (wall, CPU) rates of several runs: the slow runs measure the neighbours."""
    runs = [fn(*args) for _ in range(repeats)]
    return max(r[0] for r in runs), max(r[1] for r in runs)


def raw_mj_step_rate(task: str, n: int) -> tuple[float, float]:
    env = TASKS.make(task, cameras=())
    env.reset(seed=0)
    m, d = env.unwrapped.model, env.unwrapped.data
    with Clock() as c:
        mujoco.mj_step(m, d, nstep=n)
    return n / c.wall, n / c.cpu


def expert_success(task: str, n: int, skill: float = 1.0, noise: float = 0.0) -> tuple[int, float]:
    """(successes over seeds 0..n-1, mean episode length) of the scripted expert."""
    env = TASKS.make(task, cameras=(), obs_mode="state")
    expert = NativePickPlaceExpert(env, skill=skill, noise=noise)
    wins, lengths = 0, []
    for seed in range(n):
        obs, info = env.reset(seed=seed)
        expert.reset(seed)
        steps, done = 0, False
        while not done:
            obs, _, term, trunc, info = env.step(expert.act(obs))
            steps, done = steps + 1, term or trunc
        wins += bool(info["success"])
        lengths.append(steps)
    return wins, float(np.mean(lengths))


def control_rate(task: str, cameras: tuple[str, ...], n_steps: int) -> tuple[float, float]:
    """env.step calls per (wall, CPU) second over expert episodes totalling n_steps steps."""
    env = TASKS.make(task, cameras=cameras, image_size=84, obs_mode="image")
    expert = NativePickPlaceExpert(env)
    clock, steps, seed = Clock(), 0, 0
    while steps < n_steps:
        obs, _ = env.reset(seed=seed)
        expert.reset(seed)
        done = False
        while not done and steps < n_steps:
            action = expert.act(obs)
            with clock:
                obs, _, term, trunc, _ = env.step(action)
            steps += 1
            done = term or trunc
        seed += 1
    env.close()
    return steps / clock.wall, steps / clock.cpu


def render_rate(task: str, n: int) -> tuple[float, float]:
    """Two-camera 84x84 renders per second alone (scene update + render + readback)."""
    env = TASKS.make(task)
    env.reset(seed=0)
    u = env.unwrapped
    u._render_images(u.cameras)
    with Clock() as c:
        for _ in range(n):
            u._render_images(u.cameras)
    return n / c.wall, n / c.cpu


def default_quality_render_rate(task: str, n: int) -> tuple[float, float]:
    """The same two renders with MuJoCo's default quality: 4096 shadow map, 4x multisampling, lights
    casting shadows (what a model gets without `make_fast`)."""
    env = TASKS.make(task, cameras=())
    env.reset(seed=0)
    u = env.unwrapped
    u.model.vis.quality.shadowsize, u.model.vis.quality.offsamples = 4096, 4
    u.model.light_castshadow[:] = 1
    r = MultiCameraRenderer(u.model, ("agentview", "robot0_eye_in_hand"), 84)
    r.render(u.data)
    with Clock() as c:
        for _ in range(n):
            r.render(u.data)
    r.close()
    return n / c.wall, n / c.cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=2000, help="control steps per measurement")
    ap.add_argument("--repeats", type=int, default=3, help="runs per measurement; the best is kept")
    ap.add_argument("--seeds", type=int, default=100, help="seeds for the expert success rates")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    cams = ("agentview", "robot0_eye_in_hand")
    rows = []
    for task in ("pick_place", "stack3"):
        sub = TASKS.make(task, cameras=()).unwrapped.n_substeps
        raw = best_of(args.repeats, raw_mj_step_rate, task, 20 * args.steps)
        no_cam = best_of(args.repeats, control_rate, task, (), args.steps)
        with_cam = best_of(args.repeats, control_rate, task, cams, args.steps)
        rend = best_of(args.repeats, render_rate, task, args.steps // 2)
        slow = best_of(args.repeats, default_quality_render_rate, task, 30)
        rows.append((task, sub, raw, no_cam, with_cam, rend, slow))
    skills = ((1.0, 0.0), (0.5, 0.05), (0.3, 0.1))
    success = [(task, skill, noise, *expert_success(task, args.seeds, skill, noise))
               for task in ("pick_place", "stack3") for skill, noise in skills]
    cmd = "LP_NUM_THREADS=" + os.environ.get("LP_NUM_THREADS", "<unset>") + " " + " ".join(
        ["python", *sys.argv])
    lines = [
        "# Native MuJoCo task speed",
        "",
        f"Command: `{cmd}`  ",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"MUJOCO_GL={os.environ.get('MUJOCO_GL')}, mujoco {mujoco.__version__}, one process.  ",
        f"Timings on a shared development machine (other jobs running), best of {args.repeats} runs: "
        "noisy, re-run on a quiet one.",
        "",
        "Each cell: wall-clock rate / CPU-time rate (per CPU-second of this process, renderer threads "
        "included; the per-core figure when neighbours steal the CPU).",
        "",
        "| task | raw mj_step/s | ceiling control steps/s (mj_step/s / substeps) | control steps/s, no camera "
        "| control steps/s, 2 cameras 84x84 | 2-camera renders/s alone | same, MuJoCo default quality |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(r: tuple[float, float], div: float = 1.0) -> str:
        return f"{r[0] / div:,.0f} / {r[1] / div:,.0f}"

    for task, sub, raw, no_cam, with_cam, rend, slow in rows:
        lines.append(f"| {task} | {cell(raw)} | {cell(raw, sub)} | {cell(no_cam)} | {cell(with_cam)} "
                     f"| {cell(rend)} | {cell(slow)} |")
    lines += ["", "Control at 20 Hz, physics timestep 5 ms (10 mj_step per control step). Rendering: "
              "OSMesa, no shadows, no multisampling, one GL context per env, both cameras rendered "
              "side by side into one buffer and read back once. Target: >= 500 control steps/s per "
              "core on pick_place with two cameras. Visual change against the default quality: no "
              "cast shadows and aliased (jagged) edges; colours, lighting and geometry are the same.",
              "",
              f"## Scripted expert success over seeds 0..{args.seeds - 1} (state-only episodes)",
              "",
              "| task | skill | noise | successes | mean episode length (steps) |",
              "|---|---|---|---|---|"]
    for task, skill, noise, wins, length in success:
        lines.append(f"| {task} | {skill} | {noise} | {wins}/{args.seeds} | {length:.1f} |")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
