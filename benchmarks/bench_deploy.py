"""Deployment benchmark: the trained tiny VLA drives the MuJoCo robot bridge over ROS 2.

The robot is `real.ros.bridge_node` (its own process, wall-clock paced at 20 Hz, pick_place on
held-out seeds); the policy side is `real.ros.policy_node.PolicyNode` in this process (same class
the node runs, kept in-process so that the executor's tick records are available for the
boundary-jump metric) with the joint-space adapter around the ONNX export. Commands, joint states
and images all travel over DDS on localhost.

Per (mode, injected delay): control-tick jitter p50 / p99 / max, starved ticks, overruns, chunk
boundary jump (action change at a chunk switch / median per-step change, `real.executor.
action_changes`, joint space), task success and completion time (ticks from the first command to
success). The injected delay is added to the real inference time (`delay_s` of the adapter).

Usage:
    python benchmarks/bench_deploy.py --checkpoint runs/main/train/checkpoints/step_00004000 \
        --episodes 3 --success-episodes 10 --success-delay-ms 100 --out benchmarks/results/deploy.md
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # before rclpy loads

from real.config import load_deploy_config, make_policy
from real.executor import MODES, action_changes
from real.stages import BRIDGE_CONFIG, Watcher, ros_env, stop_process, wait_until, write_node_config
from vla.metrics import wilson_interval

HORIZON = 200  # ticks per episode (10 s), as the evaluator's pick_place horizon


def run_episode(watcher: Watcher, node_yaml: Path, context: Any, timeout_s: float) -> dict[str, Any]:
    """One episode: a fresh PolicyNode until the bridge reports done; returns its figures."""
    from real.ros.policy_node import PolicyNode

    cfg = load_deploy_config(node_yaml)
    policy = make_policy(cfg.policy, 1.0 / cfg.executor.rate_hz, len(cfg.limits.names))
    node = PolicyNode(cfg, policy, context=context)
    node.start()
    try:
        wait_until(lambda: watcher.snapshot()[0].get("done"), timeout_s, "the episode to end")
        status, _ = watcher.snapshot()
    finally:
        node.stop()
    ex = node.executor
    recs = list(ex.records)
    first = next((i for i, r in enumerate(recs) if r.action is not None), len(recs))
    recs = recs[first:]  # from the first executed action (start-up waits are not control)
    jitter = np.array([r.started - r.scheduled for r in recs]) if recs else np.zeros(1)
    steps, switches = action_changes(recs)
    med = float(np.median(steps)) if len(steps) else float("nan")
    jumps = switches / med if len(switches) and med > 0 else np.full(1, np.nan)
    lat = np.asarray(ex.latencies_s) if ex.latencies_s else np.full(1, np.nan)
    return {"seed": status["seed"], "success": bool(status["success"]), "steps": status["done_step"],
            "wall_s": status["done_wall_s"], "ticks": len(recs), "starved": int(sum(r.starved for r in recs)),
            "overruns": ex.n_overruns, "jitter": jitter, "jump_mean": float(np.nanmean(jumps)),
            "jump_max": float(np.nanmax(jumps)), "n_switches": len(switches), "chunks": ex.n_chunks,
            "latency_p50_s": float(np.median(lat)), "rejected": status["commands_rejected"],
            "violations": node.safety.n_violations}


def run_block(policy_path: Path, out: Path, mode: str, delay_ms: float, episodes: int, domain_id: int,
              first_seed: int, timeout_s: float, select: int = 1, **executor: Any) -> list[dict[str, Any]]:
    """One bridge process, `episodes` episodes with fresh policy nodes (reset between)."""
    import rclpy

    node_yaml = write_node_config(out / f"node_{mode}_{delay_ms:g}.yaml", policy_path, "onnx", mode, 20.0,
                                  delay_s=delay_ms / 1000, policy_extra={"select": select}, **executor)
    log = open(out / f"bridge_{mode}_{delay_ms:g}.log", "w")  # noqa: SIM115
    bridge = subprocess.Popen([sys.executable, "-m", "real.ros.bridge_node", "--config", str(BRIDGE_CONFIG),
                               "--seed", str(first_seed), "--horizon", str(HORIZON)],
                              env=ros_env(domain_id), stdout=log, stderr=subprocess.STDOUT)
    watcher = Watcher(domain_id)
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx, domain_id=domain_id)
    results = []
    try:
        wait_until(lambda: watcher.snapshot()[0].get("episode") == 0, 60, "the bridge", bridge)
        for ep in range(episodes):
            if ep > 0:
                watcher.reset()
                wait_until(lambda e=ep: watcher.snapshot()[0].get("episode") == e, 10, "the reset", bridge)
                time.sleep(0.2)
            r = run_episode(watcher, node_yaml, ctx, timeout_s)
            print(f"  {mode:11s} {delay_ms:4g} ms seed {r['seed']}: success {r['success']}, steps {r['steps']}, "
                  f"starved {r['starved']}, jump {r['jump_mean']:.2f}/{r['jump_max']:.2f}, "
                  f"jitter p99 {1e3 * np.percentile(r['jitter'], 99):.1f} ms", flush=True)
            results.append(r)
    finally:
        watcher.close()
        rclpy.shutdown(context=ctx)
        stop_process(bridge)
        log.close()
    return results


def adapter_ab(onnx: Path, seeds: range, n_exec: int) -> dict[str, int]:
    """No ROS, no executor: the same VLA in the same scenes, its EE actions stepped by the simulator
    (`env.step`) vs turned into joint targets by the adapter (`env.step_joints`), `n_exec` actions
    of each chunk executed open loop. Separates the adapter's fidelity from timing effects."""
    from real.joint_vla import JointSpaceVLA
    from sim.tasks.native.pick_place import PickPlaceEnv
    from vla.policy.export import OnnxPolicy

    wins = {"ee": 0, "joint": 0}
    for space in wins:
        for seed in seeds:
            env = PickPlaceEnv()
            obs, info = env.reset(seed=seed)
            vla = OnnxPolicy(onnx, seed=0)
            adapter = JointSpaceVLA(vla)
            t, success = 0, False
            while t < HORIZON and not success:
                if space == "ee":
                    chunk = vla.sample_chunk([obs])[0]
                else:
                    q = np.append(env.arm_qpos(), env.finger_qpos().mean()).astype(np.float32)
                    chunk = adapter.sample_chunk([{**obs, "state": q}])[0]
                for a in chunk[:n_exec]:
                    obs, _, _, _, info = env.step(a) if space == "ee" else env.step_joints(a[:7], a[7])
                    t += 1
                    success = bool(info["success"])
                    if success or t >= HORIZON:
                        break
            wins[space] += success
            env.close()
    return wins


def fmt_row(mode: str, delay_ms: float, rs: list[dict[str, Any]], chunk_s: float) -> str:
    jit = np.concatenate([r["jitter"] for r in rs]) * 1e3
    k, n = sum(r["success"] for r in rs), len(rs)
    done = [r["steps"] for r in rs if r["success"]]
    return (f"| {mode} | {delay_ms:g} | {delay_ms / 1000 / chunk_s:.0%} | {np.percentile(jit, 50):.2f} | "
            f"{np.percentile(jit, 99):.2f} | {jit.max():.1f} | {sum(r['overruns'] for r in rs)} | "
            f"{sum(r['starved'] for r in rs)} | {1e3 * np.median([r['latency_p50_s'] for r in rs]):.0f} | "
            f"{np.nanmean([r['jump_mean'] for r in rs]):.2f} | {np.nanmax([r['jump_max'] for r in rs]):.2f} | "
            f"{k}/{n} | {np.mean(done) / 20 if done else float('nan'):.2f} | {sum(r['rejected'] for r in rs)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", type=Path, required=True, help="checkpoint folder with an onnx/ export")
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--delays-ms", type=float, nargs="+", default=[0, 50, 100, 200, 300])
    ap.add_argument("--episodes", type=int, default=2, help="episodes per (mode, delay)")
    ap.add_argument("--success-episodes", type=int, default=10, help="episodes per mode at --success-delay-ms")
    ap.add_argument("--success-delay-ms", type=float, default=100.0)
    ap.add_argument("--timeout-s", type=float, default=60.0)
    ap.add_argument("--trigger-threshold", type=int, default=None,
                    help="aligned/rtc: fixed trigger (remaining actions) instead of delay estimate + margin")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_deploy"))
    ap.add_argument("--adapter-ab", type=int, nargs="*", default=None, metavar="N_EXEC",
                    help="only the no-ROS adapter A/B (EE vs joint stepping), for these open-loop lengths")
    ap.add_argument("--select", type=int, default=1, help="N > 1: best of N chunks by coherence (real/selection.py)")
    ap.add_argument("--json", type=Path, default=None, help="also dump raw per-episode figures here")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    onnx = args.checkpoint / "onnx"
    if not (onnx / "runtime.json").is_file():
        raise SystemExit(f"{onnx} has no ONNX export (run the export stage first)")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.adapter_ab is not None:
        n_ep = max(args.episodes, 1)
        lines = [f"Adapter A/B, seeds 1000..{1000 + n_ep - 1}, horizon {HORIZON} (no ROS, no executor): `python "
                 f"benchmarks/bench_deploy.py --checkpoint {args.checkpoint} --episodes {n_ep} --adapter-ab "
                 f"{' '.join(map(str, args.adapter_ab))}`", "",
                 "| actions executed per chunk | EE stepping (env.step) | joint targets (adapter, env.step_joints) |",
                 "|---|---|---|"]
        for n_exec in args.adapter_ab:
            w = adapter_ab(onnx, range(1000, 1000 + n_ep), n_exec)
            lines.append(f"| {n_exec} | {w['ee']}/{n_ep} | {w['joint']}/{n_ep} |")
            print(lines[-1], flush=True)
        text = "\n".join(lines) + "\n"
        if args.out:
            args.out.write_text(text)
        print(text)
        return
    chunk = json.loads((onnx / "runtime.json").read_text())["policy"]["chunk_size"]
    chunk_s = chunk / 20.0
    domain = random.SystemRandom().randint(120, 200)
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    blocks: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for delay in args.delays_ms:
        for mode in args.modes:
            n = max(args.success_episodes, args.episodes) if delay == args.success_delay_ms else args.episodes
            # every block starts at the same held-out seed: the modes see the same scenes
            extra = {} if args.trigger_threshold is None else {"trigger_threshold": args.trigger_threshold}
            blocks[(mode, delay)] = run_block(onnx, args.work, mode, delay, n, domain, 1000, args.timeout_s,
                                              select=args.select, **extra)
    minutes = (time.monotonic() - t0) / 60
    cmd = ("python benchmarks/bench_deploy.py --checkpoint " + str(args.checkpoint) + f" --episodes {args.episodes}"
           f" --success-episodes {args.success_episodes} --success-delay-ms {args.success_delay_ms:g}"
           f" --modes {' '.join(args.modes)} --delays-ms {' '.join(f'{d:g}' for d in args.delays_ms)}"
           + (f" --trigger-threshold {args.trigger_threshold}" if args.trigger_threshold is not None else "")
           + (f" --select {args.select}" if args.select > 1 else ""))
    lines = ["# Deployment benchmark: tiny VLA -> ROS 2 -> MuJoCo robot bridge", "",
             f"Command: `{cmd}`", "",
             f"Machine: {platform.node()} ({os.cpu_count()} CPUs, shared with other jobs; load average {load0:.1f} "
             f"at start, {os.getloadavg()[0]:.1f} at the end), finished "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{minutes:.0f} min. Policy: `{args.checkpoint}` (ONNX Runtime CPU) behind `real.joint_vla`; chunk "
             f"H = {chunk} ({chunk_s:g} s) at 20 Hz. Robot: `real.ros.bridge_node` pick_place, seeds 1000.., "
             f"horizon {HORIZON} ticks. Jitter in ms from the first executed action; jump = joint-space action "
             "change at a chunk switch / median per-step change (mean over runs / max); completion = mean "
             "seconds (ticks / 20) from the first command to success, successful episodes only.", "",
             "| mode | delay ms | delay / chunk | jitter p50 | p99 | max | overruns | starved | latency p50 ms | "
             "jump mean | jump max | success | completion s | rejected |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for delay in args.delays_ms:
        for mode in args.modes:
            lines.append(fmt_row(mode, delay, blocks[(mode, delay)], chunk_s))
    lines += ["", f"## Success at {args.success_delay_ms:g} ms injected delay (Wilson 95%)", "",
              "| mode | success | Wilson 95% | completion s (successes) |", "|---|---|---|---|"]
    for mode in args.modes:
        rs = blocks[(mode, args.success_delay_ms)]
        k, n = sum(r["success"] for r in rs), len(rs)
        lo, hi = wilson_interval(k, n)
        done = [r["steps"] / 20 for r in rs if r["success"]]
        lines.append(f"| {mode} | {k}/{n} | [{lo:.0%}, {hi:.0%}] | "
                     f"{np.mean(done):.2f} |" if done else f"| {mode} | {k}/{n} | [{lo:.0%}, {hi:.0%}] | n/a |")
    text = "\n".join(lines) + "\n"
    if args.json:
        raw = {f"{m}@{d:g}": [{k: v for k, v in r.items() if k != "jitter"} for r in rs]
               for (m, d), rs in blocks.items()}
        args.json.write_text(json.dumps(raw, indent=1))
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
