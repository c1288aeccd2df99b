"""Hardening soak: the real policy node at 50 Hz and the MuJoCo bridge over DDS on
localhost, with a fuzzing publisher beside them, for a configurable duration.

Processes: the bridge (`real.ros.bridge_node`, pick_place, one 32x32 camera) and the policy node
(`real.ros.policy_node`, the synthetic stand-in policy of real/testing.py, failing on an instruction
that contains FAIL like a language-conditioned VLA on a bad one) each in its own process; this
process watches the command topic and /diagnostics and publishes hostile joint states, images and
instructions on the robot's topics (`--fuzz-hz`). Every `--scenario-every` seconds (20) it also drives
one of the recoverable holds and checks, in turn: an instruction that makes inference fail
(inference_failing), a sensor dropout on the bridge (stale_observation), an e-stop that is then
cleared, joint states a real arm cannot be in (a joint at 100 rad, then velocities of 1e30: the
bridge's sensors off, the soak's own impossible states and fresh images instead) which must hold the
arm as implausible_joint_state and run again once the bridge's sane states return, and an unseen
instruction (the soak policy embeds its instruction with the real all-MiniLM-L6-v2 encoder, as the VLA
does; the node loads it at start and embeds new instructions off the inference thread): the longest
gap between two chunks from its publication to the third chunk inferred for it
(first_instruction_max_gap_ms), against the node's inference watchdog (inference_watchdog_ms,
executor.inference_timeout_s).

Records: commands on the command topic that are not 8 finite values inside the joint limits
(bad_commands), steps over the velocity bound, the node's missed deadlines (ticks > 5 ms late + skipped
ticks, from its diagnostics), holds entered / recovered, holds still on after a quiet end phase with
valid input (permanent_holds), RSS growth of both processes after warm-up. With `--suite` it first runs
the hostile-input tests with their case log and counts the distinct cases and how they ended.

Run:  nice -n 10 .venv/bin/python -m tests.real.ros.soak --minutes 30 --suite
Writes benchmarks/results/hardening_ros.json (through results_io.write_result; `--out DIR/NAME` writes
DIR/NAME.json instead). A short check that every scenario runs:
      .venv/bin/python -m tests.real.ros.soak --minutes 2 --scenario-every 6 --out /tmp/soak/hardening_ros
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[3]
SUITE = ["tests/real/ros/test_bridge_bound.py", "tests/real/ros/test_convert_hostile.py",
         "tests/real/test_executor_hostile.py"]
CMD_TOPIC = "/forward_position_controller/commands"


def soak_policy(dt: float, action_dim: int, chunk_log: str = "", known: list[str] | None = None, **kw: Any):
    """The synthetic curve follower on the native arm: gripper held half open (its range is 4.5 cm,
    the curve's amplitude is not), failing on a blank instruction, a non-finite state or "FAIL".

    With `chunk_log`, language-conditioned as the VLA is: it has a `language` encoder (the real
    all-MiniLM-L6-v2; `known` instructions preloaded, as a checkpoint's table is), embeds each
    observation's instruction inside `sample_chunk`, and appends one JSON line per chunk (monotonic
    time, instruction, whether its embedding was cached already) to `chunk_log`."""
    from tests.real.ros.helpers import picky_policy

    inner = picky_policy(dt, action_dim, **kw)
    sample = inner.sample_chunk
    if chunk_log:
        from vla.policy.language import EMBED_DIM, InstructionEncoder

        inner.language = InstructionEncoder()
        inner.language.preload({t: np.full(EMBED_DIM, EMBED_DIM ** -0.5, np.float32) for t in known or ()})

    def sample_chunk(obs_batch, prefix=None, guidance=None):
        text = str(obs_batch[0]["instruction"])
        cached = not chunk_log or inner.language.has(text)
        if chunk_log and text.strip():
            inner.language.encode([text])
        if "FAIL" in text:
            raise RuntimeError("soak: instruction asks the policy to fail")
        out = sample(obs_batch, prefix, guidance)
        out[..., 7] = 0.02
        if chunk_log:
            with open(chunk_log, "a") as f:
                f.write(json.dumps({"t": time.monotonic(), "instruction": text, "cached": cached}) + "\n")
        return out

    inner.sample_chunk = sample_chunk
    return inner


def write_configs(tmp: Path, rate_hz: float, chunk_log: Path | None = None) -> tuple[Path, Path, dict]:
    """The node's and the bridge's configs; returns their paths and the node's config as a dict."""
    node = yaml.safe_load((ROOT / "configs/deploy/native_arm.yaml").read_text())
    node["executor"].update(rate_hz=rate_hz, mode="aligned")
    node["cameras"] = [{"name": "agentview", "topic": "/camera/agentview/image_raw", "height": 32, "width": 32}]
    node["diagnostics_hz"] = 2.0
    node["policy"] = {"factory": "tests.real.ros.soak:soak_policy", "horizon": 25, "radius": 0.3,
                      "delay_s": 0.02}
    if chunk_log is not None:
        node["policy"].update(chunk_log=str(chunk_log), known=[node["default_instruction"]])
    bridge = yaml.safe_load((ROOT / "configs/deploy/bridge.yaml").read_text())
    bridge.update(cameras=["agentview"], image_size=32, horizon=10**9)
    (tmp / "node.yaml").write_text(yaml.safe_dump(node))
    (tmp / "bridge.yaml").write_text(yaml.safe_dump(bridge))
    return tmp / "node.yaml", tmp / "bridge.yaml", node


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Soak:
    def __init__(self, limits: dict, rate_hz: float) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import Image, JointState
        from std_msgs.msg import Float64MultiArray, String
        from std_srvs.srv import SetBool

        from real.ros.spinner import BackgroundSpinner

        self.rclpy, self.JointState, self.Image, self.String, self.SetBool = rclpy, JointState, Image, String, SetBool
        self.lower, self.upper = np.array(limits["lower"]), np.array(limits["upper"])
        self.max_step = np.array(limits["max_velocity"]) / rate_hz
        self.ctx = rclpy.context.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node("hardening_soak", context=self.ctx)
        self.lock = threading.Lock()
        self.n_commands = self.bad = self.step_over = 0
        self.prev: np.ndarray | None = None
        self.diag: dict[str, str] = {}
        self.diag_message = ""
        self.diag_messages = 0
        self.q: np.ndarray | None = None
        self.limits = limits
        self.fuzz_sent: dict[str, int] = {}
        self.node.create_subscription(Float64MultiArray, CMD_TOPIC, self._on_cmd, 100)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self.node.create_subscription(JointState, "/joint_states", self._on_js, qos_profile_sensor_data)
        self.pub_js = self.node.create_publisher(JointState, "/joint_states", qos_profile_sensor_data)
        self.pub_img = self.node.create_publisher(Image, "/camera/agentview/image_raw", qos_profile_sensor_data)
        self.pub_ins = self.node.create_publisher(String, "/instruction", 10)
        self.estop = self.node.create_client(SetBool, "/vla_policy/emergency_stop")
        self.dropout = self.node.create_client(SetBool, "/bridge/sensor_dropout")
        self.spinner = BackgroundSpinner(self.node, self.ctx)
        self.rng = random.Random(0)

    def _on_cmd(self, msg) -> None:
        c = np.array(msg.data)
        with self.lock:
            self.n_commands += 1
            ok = c.shape == self.lower.shape and np.all(np.isfinite(c)) and np.all(c >= self.lower) \
                and np.all(c <= self.upper)
            self.bad += not ok
            if ok and self.prev is not None:
                # 2x: a command lost between the node and this monitor doubles the step it sees
                self.step_over += bool(np.any(np.abs(c - self.prev) > 2 * self.max_step * (1 + 1e-6)))
            self.prev = c if ok else self.prev

    def _on_diag(self, msg) -> None:
        if msg.status and "chunk executor" in msg.status[0].name:
            with self.lock:
                self.diag = {kv.key: kv.value for kv in msg.status[0].values}
                self.diag_message = msg.status[0].message
                self.diag_messages += 1

    def _on_js(self, msg) -> None:
        q = np.array(msg.position)
        # this process hears its own hostile messages too: keep only plausible ones as the fuzzing base
        if len(msg.name) == 8 and q.shape == (8,) and np.all(np.abs(q) < 10):
            with self.lock:
                self.q = q

    def call(self, client, on: bool) -> bool:
        if not client.wait_for_service(timeout_sec=5):
            return False
        future = client.call_async(self.SetBool.Request(data=on))
        end = time.monotonic() + 5
        while not future.done() and time.monotonic() < end:
            time.sleep(0.02)
        return future.done() and future.result().success

    def stamp(self, offset: float = 0.0):
        return (self.node.get_clock().now() + self.rclpy.duration.Duration(nanoseconds=int(offset * 1e9))).to_msg()

    def fuzz_once(self) -> None:
        """One hostile message of a random kind (each must be dropped by the policy node)."""
        r = self.rng
        with self.lock:
            q = None if self.q is None else self.q.copy()
        names = ["j1", "j2", "j3", "j4", "j5", "j6", "j7", "gripper"]
        pos = list(map(float, q)) if q is not None else [0.0] * 8
        kind = r.choice(["js_nan", "js_f32_overflow", "js_old", "js_future", "js_unstamped", "js_names",
                         "js_lengths", "img_size", "img_encoding", "img_data", "img_old", "ins_blank",
                         "ins_nonprintable", "ins_long"])
        if kind.startswith("js"):
            msg = self.JointState(name=names, position=pos)
            msg.header.stamp = self.stamp()
            if kind == "js_nan":
                msg.position[r.randrange(8)] = float("nan")
            elif kind == "js_f32_overflow":
                msg.position[r.randrange(7)] = r.choice([1e39, -1e39, 3.5e38])
            elif kind in ("js_old", "js_future"):
                msg.header.stamp = self.stamp(r.uniform(0.6, 30.0) * (-1 if kind == "js_old" else 1))
            elif kind == "js_unstamped":
                msg.header.stamp.sec, msg.header.stamp.nanosec = 0, 0
            elif kind == "js_names":
                msg.name = [*names[:-2], "x", "y"]
            else:
                msg.position = pos[: r.randrange(8)]
            self.pub_js.publish(msg)
        elif kind.startswith("img"):
            h = w = 32
            msg = self.Image(height=h, width=w, encoding="rgb8", step=w * 3, data=bytes(h * w * 3))
            msg.header.stamp = self.stamp()
            if kind == "img_size":
                msg.height = r.choice([0, 31, 33, 64])
            elif kind == "img_encoding":
                msg.encoding = r.choice(["mono8", "32FC1", "", "rgba8"])
            elif kind == "img_data":
                msg.data = bytes(r.randrange(0, h * w * 3))
            else:
                msg.header.stamp = self.stamp(-r.uniform(0.6, 30.0))
            self.pub_img.publish(msg)
        else:
            text = {"ins_blank": r.choice(["", " ", "\t\n"]), "ins_nonprintable": "pick\x00up",
                    "ins_long": "x" * 2000}[kind]
            self.pub_ins.publish(self.String(data=text))
        self.fuzz_sent[kind] = self.fuzz_sent.get(kind, 0) + 1

    def wait_message(self, pred, timeout: float) -> str | None:
        """The first diagnostics message (from now on) for which `pred` holds, or None after `timeout` s."""
        end = time.monotonic() + timeout
        with self.lock:
            seen = self.diag_messages
        while time.monotonic() < end:
            with self.lock:
                fresh, message = self.diag_messages > seen, self.diag_message
            if fresh and pred(message):
                return message
            time.sleep(0.02)
        return None

    def implausible(self, how: str, seconds: float = 2.0) -> dict[str, Any]:
        """Joint states a real arm cannot be in (`how`: position, a joint at 100 rad; velocity, 1e30 rad/s
        on every joint), finite, freshly stamped, at 50 Hz, with fresh images, while the bridge's sensors
        are off (else its sane states would interleave). The node must hold as implausible_joint_state,
        name it in /diagnostics, and run again once the bridge's states return."""
        names = list(self.limits["names"])
        with self.lock:
            q = np.zeros(len(names)) if self.q is None else self.q.copy()
        position, velocity = list(map(float, q)), [0.0] * len(names)
        if how == "position":
            position[1] = 100.0
        else:
            velocity = [1e30] * len(names)
        dropped = self.call(self.dropout, True)
        held = None
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                js = self.JointState(name=names, position=position, velocity=velocity)
                js.header.stamp = self.stamp()
                img = self.Image(height=32, width=32, encoding="rgb8", step=96, data=bytes(32 * 32 * 3))
                img.header.stamp = js.header.stamp
                self.pub_js.publish(js)
                self.pub_img.publish(img)
                with self.lock:
                    if held is None and "implausible_joint_state" in self.diag_message:
                        held = self.diag_message
                time.sleep(0.02)
        finally:
            self.call(self.dropout, False)
        recovered = self.wait_message(lambda m: "running" in m, 15.0) is not None
        return {"dropout": dropped, "held": held is not None, "recovered": recovered, "message": held or ""}

    def unseen_instruction(self, k: int, chunks: ChunkLog) -> dict[str, Any]:
        """Publish an instruction the node has not seen (5 Hz: the bridge republishes its own each second)
        until 3 chunks were inferred for it; the longest gap between two chunks from its publication to
        the third chunk for it (chunks for other instructions in between count as chunks)."""
        text = f"pick up the red cube, take {k} ({self.rng.randrange(10**6)})"
        chunks.read()
        t_sent = time.monotonic()
        end = t_sent + 20
        n_new = 0
        while time.monotonic() < end and n_new < 3:
            self.pub_ins.publish(self.String(data=text))
            time.sleep(0.2)
            n_new += sum(c["instruction"] == text for c in chunks.read())
        log = chunks.entries
        first_new = next((i for i, c in enumerate(log) if c["instruction"] == text), None)
        before = [i for i, c in enumerate(log) if c["t"] < t_sent]
        if first_new is None or n_new < 3 or not before:
            return {"instruction": text, "chunks_for_it": n_new, "max_gap_ms": None}
        times = [c["t"] for c in log[before[-1]:first_new + 3]]
        gap_ms = round(1e3 * float(np.max(np.diff(times))), 1)
        return {"instruction": text, "chunks_for_it": n_new, "max_gap_ms": gap_ms,
                "uncached_chunks": sum(not c["cached"] for c in log[before[-1]:])}

    def close(self) -> None:
        self.spinner.close()
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.ctx)


class ChunkLog:
    """The soak policy's chunk log (one JSON line per chunk, written by the node's process), read as it grows."""

    def __init__(self, path: Path) -> None:
        self.path, self.entries, self._offset = path, [], 0

    def read(self) -> list[dict[str, Any]]:
        """The entries added since the last read (all are kept in `entries`)."""
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        whole = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
        self._offset += len(whole)
        new = [json.loads(line) for line in whole.decode().splitlines() if line]
        self.entries += new
        return new


def run_suite(log: Path) -> dict[str, Any]:
    env = {**os.environ, "VLA_HOSTILE_CASE_LOG": str(log), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITE], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    cases: dict[tuple[str, str], str] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        rec = json.loads(line)
        cases[(rec["area"], rec["case"])] = rec["outcome"]
    clear = sum(o.startswith(("rejected", "hold_recovered")) for o in cases.values())
    by_area: dict[str, int] = {}
    for area, _ in cases:
        by_area[area] = by_area.get(area, 0) + 1
    return {"suite_rc": proc.returncode, "suite_tail": proc.stdout.strip().splitlines()[-1:],
            "suite_s": round(time.monotonic() - t0, 1), "hostile_cases": len(cases), "clear_errors": clear,
            "accepted_valid_or_bounded": len(cases) - clear, "cases_by_area": by_area}


def main() -> None:
    # here, not at the top: the policy node imports this module for soak_policy, which has no need of the results
    from benchmarks.results_io import RESULTS, write_result

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--rate-hz", type=float, default=50.0)
    ap.add_argument("--fuzz-hz", type=float, default=20.0)
    ap.add_argument("--domain-id", type=int, default=random.SystemRandom().randint(150, 230))
    ap.add_argument("--suite", action="store_true", help="also run the hostile-input tests and count their cases")
    ap.add_argument("--scenario-every", type=float, default=20.0, help="seconds between the hold scenarios")
    ap.add_argument("--no-language", action="store_true",
                    help="a soak policy without the language model (no unseen-instruction scenario)")
    ap.add_argument("--out", type=Path, default=RESULTS / "hardening_ros", help="DIR/NAME: writes DIR/NAME.json")
    args = ap.parse_args()
    os.environ.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=str(args.domain_id),
                      PYTHONUNBUFFERED="1")
    tmp = Path(tempfile.mkdtemp(prefix="hardening_soak_"))
    result: dict[str, Any] = {}
    if args.suite:
        result.update(run_suite(tmp / "cases.jsonl"))
        print("suite:", json.dumps(result), flush=True)
    chunks = None if args.no_language else ChunkLog(tmp / "chunks.jsonl")
    node_cfg, bridge_cfg, node_dict = write_configs(tmp, args.rate_hz, None if chunks is None else chunks.path)
    limits = node_dict["limits"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = {name: subprocess.Popen([sys.executable, "-m", mod, "--config", str(cfg)], cwd=ROOT, env=env,
                                    stdout=open(tmp / f"{name}.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
             for name, mod, cfg in (("bridge", "real.ros.bridge_node", bridge_cfg),
                                    ("node", "real.ros.policy_node", node_cfg))}
    soak = Soak(limits, args.rate_hz)
    rss: dict[str, list[float]] = {k: [] for k in procs}
    scenarios = {"inference_failing": 0, "stale_observation": 0, "estop": 0, "implausible_position": 0,
                 "implausible_velocity": 0}
    if chunks is not None:
        scenarios["unseen_instruction"] = 0
    implausible: list[dict[str, Any]] = []
    unseen: list[dict[str, Any]] = []
    try:
        t_start = time.monotonic()
        while soak.n_commands < 50 or "running" not in soak.diag_message:
            if time.monotonic() - t_start > 180:  # the language model loads at node start
                raise RuntimeError(f"the node did not start: {soak.diag_message!r}; logs in {tmp}")
            time.sleep(0.2)
        t0 = time.monotonic()
        end = t0 + 60 * args.minutes
        next_fuzz, next_rss, next_scenario, k = t0, t0, t0 + args.scenario_every, 0
        while time.monotonic() < end - 10:  # the last 10 s: valid input only (permanent holds show)
            now = time.monotonic()
            if now >= next_fuzz:
                soak.fuzz_once()
                next_fuzz += 1.0 / args.fuzz_hz
            if now >= next_rss:
                for name, p in procs.items():
                    rss[name].append(rss_mb(p.pid))
                next_rss += 10
            if now >= next_scenario and now < end - 25:
                which = list(scenarios)[k % len(scenarios)]
                k += 1
                if which == "inference_failing":
                    soak.pub_ins.publish(soak.String(data="FAIL on purpose"))
                    time.sleep(2.0)
                    soak.pub_ins.publish(soak.String(data="pick up the red cube and place it in the green zone"))
                elif which == "stale_observation":
                    soak.call(soak.dropout, True)
                    time.sleep(1.0)
                    soak.call(soak.dropout, False)
                elif which == "estop":
                    soak.call(soak.estop, True)
                    time.sleep(1.0)
                    soak.call(soak.estop, False)
                elif which.startswith("implausible_"):
                    implausible.append({"how": which, **soak.implausible(which.removeprefix("implausible_"))})
                    print(which, json.dumps(implausible[-1]), flush=True)
                else:
                    unseen.append(soak.unseen_instruction(k, chunks))
                    print(which, json.dumps(unseen[-1]), flush=True)
                scenarios[which] += 1
                next_scenario = time.monotonic() + args.scenario_every
            time.sleep(0.005)
        time.sleep(max(0.0, end - time.monotonic()))
        with soak.lock:
            diag, message = dict(soak.diag), soak.diag_message
            n_cmd, bad, step_over = soak.n_commands, soak.bad, soak.step_over
        alive = {name: p.poll() is None for name, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs.values():
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        soak.close()
    warm = max(1, len(rss["node"]) // 5)  # growth after the first fifth (imports, caches, DDS discovery)
    entered, recovered = float(diag.get("holds_entered", "nan")), float(diag.get("holds_recovered", "nan"))
    result.update({
        "soak_minutes": args.minutes, "rate_hz": args.rate_hz, "fuzz_messages": sum(soak.fuzz_sent.values()),
        "fuzz_by_kind": soak.fuzz_sent, "scenarios": scenarios, "commands_seen": n_cmd, "bad_commands": bad,
        "steps_over_2x_velocity_bound": step_over,
        "soak_missed_deadlines_5ms": int(float(diag.get("late_ticks", "nan"))
                                         + float(diag.get("overrun_ticks", "nan"))),
        "control_ticks": int(args.rate_hz * 60 * args.minutes), "holds_entered": entered, "holds_recovered": recovered,
        "permanent_holds": int(entered - recovered) + ("running" not in message),
        "final_diagnostics_message": message, "processes_alive_at_end": alive,
        "rejected": {k: float(v) for k, v in diag.items() if k.startswith("rejected_")},
        "soak_rss_growth_mb": round(max(v[-1] - v[warm] for v in rss.values()), 1),
        "rss_mb": {k: [round(v[warm], 1), round(v[-1], 1)] for k, v in rss.items()},
        "inference_retries": float(diag.get("inference_retries", "nan")),
        # impossible joint states: each must hold as implausible_joint_state (named in /diagnostics) and
        # run again once the bridge's sane states return
        "implausible_joint_state_cases": len(implausible),
        "implausible_joint_state_held": sum(c["held"] for c in implausible),
        "implausible_joint_state_recovered": sum(c["held"] and c["recovered"] for c in implausible),
        "holds_implausible_joint_state": float(diag.get("holds_implausible_joint_state", 0)),
        "implausible_joint_state_messages": sorted({c["message"] for c in implausible if c["message"]})[:4],
    })
    if chunks is not None:
        gaps = [c["max_gap_ms"] for c in unseen if c["max_gap_ms"] is not None]
        result.update({
            "unseen_instruction_cases": len(unseen),
            "unseen_instruction_unmeasured": len(unseen) - len(gaps),  # fewer than 3 chunks for it in 20 s
            "first_instruction_max_gap_ms": max(gaps) if gaps else None,
            "first_instruction_gaps_ms": gaps,
            "inference_watchdog_ms": 1e3 * float(node_dict["executor"]["inference_timeout_s"]),
            "instruction_embed_max_ms": float(diag.get("instruction_embed_max_ms", "nan")),
            "chunks_that_embedded_on_the_inference_thread": sum(c.get("uncached_chunks", 0) for c in unseen),
        })
    result["suite_run"] = bool(args.suite)  # without --suite, the suite's figures are a previous run's
    results = args.out.parent
    results.mkdir(parents=True, exist_ok=True)
    key_figures = ["bad_commands", "permanent_holds", "soak_missed_deadlines_5ms"]
    if "first_instruction_max_gap_ms" in result:
        key_figures.append("first_instruction_max_gap_ms")
    write_result(args.out.name, result, seed_range="none", results=results, key_figures=key_figures,
                 held_out="hostile ROS messages and fault scenarios generated by the soak; nothing was tuned on them",
                 index=results.resolve() == RESULTS.resolve())
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
