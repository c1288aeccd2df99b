"""Main-job stage `deploy`: the exported VLA drives the MuJoCo robot bridge over ROS 2.

Both sides run as their own processes, exactly as on a robot: `real.ros.bridge_node` (the robot)
and `real.ros.policy_node` (executor + safety layer + the joint-space VLA adapter); this process
only watches (`/task/status`, the policy node's `/diagnostics`) and resets the bridge between
episodes, on its own ROS_DOMAIN_ID with localhost-only discovery. One policy node for all episodes, as
on a robot: between two it is paused (`~/pause`: it brakes to rest and goes silent), the bridge reset,
and it resumes as a fresh node would start (its safety layer at the measured pose, a new executor, the
policy's state reset, no input from before the reset). A node per episode cost ~4 s of start-up each.

`run_deploy` is shared with `benchmarks/bench_deploy.py`.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from vla.config import CONFIG_DIR, ConfigError
from vla.job import JobContext, export_checkpoint, stage
from vla.protocol import REPORT, seed_range

log = logging.getLogger(__name__)

NODE_CONFIG = CONFIG_DIR / "deploy" / "native_arm.yaml"
BRIDGE_CONFIG = CONFIG_DIR / "deploy" / "bridge.yaml"
# The folder that holds the `real` package (the repository, or site-packages in a wheel install).
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
FIRST_SEED = REPORT.start  # deployment episodes are figures: the protocol's report seeds (vla.protocol)


def write_node_config(out: Path, policy_path: str | Path, backend: str, mode: str, rate_hz: float,
                      delay_s: float = 0.0, policy_extra: dict[str, Any] | None = None, objects_task: str = "",
                      **executor: Any) -> Path:
    """configs/deploy/native_arm.yaml with this run's policy (`policy_extra`: more keys of
    make_joint_vla, e.g. select) and executor settings. `objects_task`: the policy reads that task's
    object poses (obs_mode=state) from the bridge's pose topic."""
    cfg = yaml.safe_load(NODE_CONFIG.read_text())
    cfg["policy"].update(path=str(policy_path), backend=backend, delay_s=float(delay_s), **(policy_extra or {}))
    if objects_task:
        from vla.robot.objects import pose_features

        cfg["policy"]["objects_task"] = objects_task
        topic = yaml.safe_load(BRIDGE_CONFIG.read_text())["objects_topic"]
        cfg["objects"] = {"topic": topic, "count": len(pose_features(objects_task)[0])}
    cfg["executor"].update(mode=mode, rate_hz=float(rate_hz), **executor)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def ros_env(domain_id: int) -> dict[str, str]:
    """This process's environment for the ROS 2 child processes. They run in the run's folder, so
    `python -m real.ros...` must import this very `real` package from any working directory: its
    folder goes on PYTHONPATH unless the interpreter finds it anyway (an installed package)."""
    env = os.environ.copy()
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=str(domain_id), PYTHONUNBUFFERED="1")
    if not _on_default_path(PACKAGE_ROOT):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
    return env


def _on_default_path(folder: Path) -> bool:
    """Whether a child interpreter started elsewhere finds `folder` on sys.path (site-packages, a .pth
    entry, PYTHONPATH): every sys.path entry but the working directory's."""
    cwd = Path.cwd().resolve()
    return any(p and Path(p).resolve() == folder != cwd for p in sys.path)


def stop_process(proc: subprocess.Popen, timeout: float = 15.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


TRUTH_TOPIC = "/sim/truth/object_poses"  # the bridge's ground truth beside a pose node: measured, never read
ESTIMATES_TOPIC = "/perception/object_poses"  # the pose node's (and the policy node's objects section's)


class Watcher:
    """In-process rclpy observer: latest bridge status and policy diagnostics; resets the bridge. With
    `pose_topics` (estimates, truth) it pairs the pose node's PoseArrays with the bridge's ground truth of the
    same stamp (the pose node stamps with its frames', the bridge its truth with the same tick's) and keeps
    each pair's position error per object (mm) and how much later the estimate arrived (ms)."""

    def __init__(self, domain_id: int, pose_topics: tuple[str, str] | None = None) -> None:
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # before rclpy loads rmw
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from std_msgs.msg import String
        from std_srvs.srv import SetBool, Trigger

        from real.ros.spinner import BackgroundSpinner

        self._rclpy, self._trigger = rclpy, Trigger
        self.ctx = rclpy.context.Context()
        rclpy.init(context=self.ctx, domain_id=domain_id)
        self.node = rclpy.create_node("deploy_watcher", context=self.ctx)
        self.lock = threading.Lock()
        self.status: dict[str, Any] = {}
        self.diag: dict[str, float] = {}
        self.diag_message = ""
        self.node.create_subscription(String, "/task/status", self._on_status, 10)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self.reset_client = self.node.create_client(Trigger, "/bridge/reset")
        self.pause_client = self.node.create_client(SetBool, "/vla_policy/pause")
        self._set_bool = SetBool
        self._truth: dict[tuple[int, int], tuple[np.ndarray, float]] = {}
        self.pose_pairs: list[tuple[np.ndarray, float]] = []  # (error mm per object, lag ms)
        if pose_topics is not None:
            from geometry_msgs.msg import PoseArray
            from rclpy.qos import qos_profile_sensor_data

            self.node.create_subscription(PoseArray, pose_topics[0], self._on_estimate, qos_profile_sensor_data)
            self.node.create_subscription(PoseArray, pose_topics[1], self._on_truth, qos_profile_sensor_data)
        self.spinner = BackgroundSpinner(self.node, self.ctx, period_s=0.05)

    def _on_status(self, msg: Any) -> None:
        with self.lock:
            self.status = json.loads(msg.data)

    def _on_diag(self, msg: Any) -> None:
        if not msg.status or "chunk executor" not in msg.status[0].name:
            return
        with self.lock:
            self.diag = {kv.key: float(kv.value) for kv in msg.status[0].values}
            self.diag_message = msg.status[0].message

    @staticmethod
    def _positions(msg: Any) -> tuple[tuple[int, int], np.ndarray]:
        return ((msg.header.stamp.sec, msg.header.stamp.nanosec),
                np.array([[p.position.x, p.position.y, p.position.z] for p in msg.poses]))

    def _on_truth(self, msg: Any) -> None:
        stamp, xyz = self._positions(msg)
        with self.lock:
            self._truth[stamp] = (xyz, time.monotonic())
            if len(self._truth) > 200:  # ten seconds of ticks: an estimate is never that late
                self._truth.pop(next(iter(self._truth)))

    def _on_estimate(self, msg: Any) -> None:
        stamp, xyz = self._positions(msg)
        with self.lock:
            truth = self._truth.get(stamp)
            if truth is not None and truth[0].shape == xyz.shape:
                self.pose_pairs.append((1e3 * np.linalg.norm(xyz - truth[0], axis=1),
                                        1e3 * (time.monotonic() - truth[1])))

    def take_pose_pairs(self) -> list[tuple[np.ndarray, float]]:
        with self.lock:
            out, self.pose_pairs = self.pose_pairs, []
            return out

    def snapshot(self) -> tuple[dict[str, Any], dict[str, float]]:
        with self.lock:
            return dict(self.status), dict(self.diag)

    def reset(self, timeout: float = 20.0) -> dict[str, Any]:
        return json.loads(self._call(self.reset_client, self._trigger.Request(), timeout).message)

    def pause(self, on: bool, timeout: float = 20.0) -> None:
        """The policy node's ~/pause (true: brake to rest and go silent; false: a new episode)."""
        reply = self._call(self.pause_client, self._set_bool.Request(data=on), timeout)
        if not reply.success:
            raise RuntimeError(f"/vla_policy/pause {on}: {reply.message}")

    @staticmethod
    def _call(client: Any, request: Any, timeout: float) -> Any:
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"the service {client.srv_name} did not appear")
        future = client.call_async(request)
        end = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > end:
                raise RuntimeError(f"no reply from {client.srv_name}")
            time.sleep(0.02)
        return future.result()

    def close(self) -> None:
        self.spinner.close()
        self.node.destroy_node()
        self._rclpy.shutdown(context=self.ctx)


def wait_until(pred: Any, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the process {proc.args[:4]} exited with {proc.returncode}")
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def run_deploy(policy_path: str | Path, out_dir: Path, episodes: int = 1, mode: str = "aligned",
               backend: str = "onnx", rate_hz: float = 20.0, timeout_s: float = 180.0, domain_id: int = 77,
               delay_s: float = 0.0, first_seed: int = FIRST_SEED, horizon: int = 200,
               objects_task: str = "", pose_estimator: str | Path = "", pose_smoothing: float = 1.0,
               **executor: Any) -> dict[str, Any]:
    """Run `episodes` episodes of pick_place over ROS 2; per-episode records + aggregates.
    `objects_task`: a policy trained with obs_mode=state, which reads object poses: the bridge's ground
    truth, or with `pose_estimator` (a `vla perception train` folder) the pose node's estimates from the
    bridge's camera images and joint states, the bridge then publishing its truth only on TRUTH_TOPIC, which
    the policy does not read and the watcher compares the estimates with (`pose_*` in each record).
    `executor`: further executor settings of the node's config (e.g. ensemble_rate)."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if pose_estimator and not objects_task:
        raise ValueError("pose_estimator: the policy reads no object poses (objects_task is empty)")
    # The nodes run in out_dir (any working directory works for them): every path they get is absolute.
    out_dir, policy_path = Path(out_dir).resolve(), Path(policy_path).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "episodes.jsonl").unlink(missing_ok=True)  # the bridge appends: a rerun's file holds its own only
    for old in out_dir.glob("policy_node_*.log"):  # a node per episode, before one node served them all
        old.unlink()
    node_cfg = write_node_config(out_dir / "policy_node.yaml", policy_path, backend, mode, rate_hz, delay_s,
                                 objects_task=objects_task, **executor)
    bridge_cfg = BRIDGE_CONFIG
    if pose_estimator:  # the policy reads the pose node's poses; the truth goes where only the watcher reads it
        bridge_cfg = out_dir / "bridge.yaml"
        bridge_cfg.write_text(yaml.safe_dump({**yaml.safe_load(BRIDGE_CONFIG.read_text()),
                                              "objects_topic": TRUTH_TOPIC}, sort_keys=False))
    env = ros_env(domain_id)
    bridge_log = open(out_dir / "bridge.log", "w")  # noqa: SIM115 (closed in finally)
    bridge = subprocess.Popen([sys.executable, "-m", "real.ros.bridge_node", "--config", str(bridge_cfg),
                               "--seed", str(first_seed), "--horizon", str(horizon),
                               "--result-file", str(out_dir / "episodes.jsonl")],
                              cwd=out_dir, env=env, stdout=bridge_log, stderr=subprocess.STDOUT)
    poses = pose_log = None
    if pose_estimator:
        pose_log = open(out_dir / "pose_node.log", "w")  # noqa: SIM115 (closed in finally)
        poses = subprocess.Popen([sys.executable, "-m", "real.ros.pose_node", "--estimator",
                                  str(Path(pose_estimator).resolve()), "--rate-hz", str(rate_hz),
                                  "--smoothing", str(pose_smoothing)],
                                 cwd=out_dir, env=env, stdout=pose_log, stderr=subprocess.STDOUT)
    watcher = Watcher(domain_id, (ESTIMATES_TOPIC, TRUTH_TOPIC) if pose_estimator else None)
    records: list[dict[str, Any]] = []
    t_start = time.monotonic()
    node_log = open(out_dir / "policy_node.log", "w")  # noqa: SIM115 (closed in finally)
    # started beside the bridge: it loads while the bridge does, and holds until the robot's inputs come
    def start_node() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "real.ros.policy_node", "--config", str(node_cfg)],
                                cwd=out_dir, env=env, stdout=node_log, stderr=subprocess.STDOUT)

    node = start_node()
    restarted: set[int] = set()
    try:
        wait_until(lambda: watcher.snapshot()[0].get("episode") == 0, 60, "the bridge to come up", bridge)
        for ep in range(episodes):
            if ep > 0:
                watcher.pause(True)
                time.sleep(0.1)  # its last commands are delivered before the reset, not after
                watcher.reset()
                wait_until(lambda e=ep: watcher.snapshot()[0].get("episode") == e, 10, f"episode {ep}", bridge)
                time.sleep(0.2)  # the pose node's estimates of frames from before the reset have arrived
                watcher.take_pose_pairs()  # the reset's ticks are not the episode's
                try:
                    watcher.pause(False)
                except RuntimeError as err:
                    if not _inference_stuck(err):
                        raise
                    # The node held the arm (inference_timeout) and cannot abandon a hung inference thread: a
                    # fresh node serves the rest; its threads' stacks go to its log first (faulthandler)
                    log.warning("deploy: the policy node's inference hangs (%s); restarting it for episode %d",
                                err, ep)
                    node.send_signal(signal.SIGUSR1)
                    time.sleep(0.5)
                    stop_process(node)
                    node = start_node()
                    restarted.add(ep)
            else:
                watcher.take_pose_pairs()
            records.append(_episode(watcher, node, timeout_s, bridge))
            # an episode the new node joined late is not the policy's own: it says so
            records[-1]["policy_node_restarted"] = ep in restarted
            if pose_estimator:
                records[-1].update(pose_errors(watcher.take_pose_pairs(), objects_task))
    finally:
        watcher.close()
        code = stop_process(node)
        for r in records:
            r["policy_node_exit"] = code
        node_log.close()
        if poses is not None:
            stop_process(poses)
            pose_log.close()
        stop_process(bridge)
        bridge_log.close()
    (out_dir / "records.json").write_text(json.dumps(records, indent=1))
    n_success = sum(r["success"] for r in records)
    pose = {}
    if pose_estimator:  # the medians over episodes of each episode's median
        pose = {k: round(float(np.median([r[k] for r in records if r.get(k) is not None])), 1)
                for k in records[0] if k.startswith("pose_") and any(r.get(k) is not None for r in records)}
    return {"episodes": len(records), "success": f"{n_success}/{len(records)}", **pose,
            "policy_node_restarts": len(restarted),
            "success_rate": n_success / len(records), "records": records,
            "object_poses": ("" if not objects_task else f"pose node ({pose_estimator})" if pose_estimator
                             else "the bridge's ground truth"),
            "seconds": round(time.monotonic() - t_start, 1)}


def _inference_stuck(err: Exception) -> bool:
    """Whether a failed resume says the node's inference never returned (real.ros.policy_node._resume)."""
    from real.ros import INFERENCE_HANGS

    return INFERENCE_HANGS in str(err)


def _episode(watcher: Watcher, node: subprocess.Popen, timeout_s: float, bridge: subprocess.Popen) -> dict[str, Any]:
    episode = watcher.snapshot()[0].get("episode")
    wait_until(lambda: watcher.snapshot()[0].get("done"), timeout_s, f"episode {episode} to finish", node)
    if bridge.poll() is not None:
        raise RuntimeError(f"the bridge exited with {bridge.returncode} during episode {episode}")
    time.sleep(0.6)  # one more diagnostics message (2 Hz) that covers the episode's end
    status, diag = watcher.snapshot()
    return {"episode": status["episode"], "seed": status["seed"], "success": bool(status["success"]),
            "steps": status["done_step"], "wall_s": status["done_wall_s"],
            "starved_ticks": diag.get("starved_ticks"), "jitter_p99_ms": _ms(diag.get("jitter_p99_s")),
            "latency_p50_ms": _ms(diag.get("latency_p50_s")), "safety_violations": diag.get("safety_violations"),
            "commands_rejected": status["commands_rejected"], "commands_accepted": status["accepted"],
            "bridge_overruns": status["overruns"]}


def pose_errors(pairs: list[tuple[np.ndarray, float]], task: str) -> dict[str, float | None]:
    """One episode's median position error (mm) per object of `task` and median lag (ms) of the pose node's
    estimates against the bridge's truth of the same ticks."""
    from vla.robot.objects import pose_features

    names, _ = pose_features(task)
    if not pairs:
        return {f"pose_{o}_mm": None for o in names} | {"pose_lag_ms": None, "pose_pairs": 0}
    err = np.stack([p[0] for p in pairs])
    return ({f"pose_{o}_mm": round(float(np.median(err[:, k])), 2) for k, o in enumerate(names)}
            | {"pose_lag_ms": round(float(np.median([p[1] for p in pairs])), 1), "pose_pairs": len(pairs)})


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(1e3 * seconds, 2)


@stage("deploy")
def deploy_stage(ctx: JobContext) -> dict[str, Any]:
    """One (or `deploy.episodes`) pick_place episode(s) through ROS 2 against the MuJoCo bridge."""
    cfg = ctx.config.deploy
    if cfg.policy == "refined":  # JobConfig.validate checked the stage order (or overwrite=false lets it be earlier)
        if "refine" not in ctx.results:
            raise ConfigError("deploy.policy=refined: this job has no refine result (run the refine stage first)")
        refined = ctx.results["refine"]
        if "checkpoint" not in refined:
            raise ConfigError(f"deploy.policy=refined: the refine stage's {refined['method']} made "
                             f"'{refined['policy']}', not a checkpoint the ROS node can load; "
                             "use deploy.policy=pretrained or a fine-tuning method")
        ckpt = Path(refined["checkpoint"])
        if cfg.backend == "onnx" and not (ckpt / "onnx").exists():
            export_checkpoint(ctx, ckpt)
    else:
        ckpt = ctx.checkpoint
    path = ckpt / "onnx" if cfg.backend == "onnx" else ckpt
    objects_task = ctx.config.demos.task if ctx.config.demos.obs_mode == "state" else ""  # the policy reads poses
    estimator = ""
    if objects_task and cfg.poses == "estimator":
        if "estimator" not in ctx.results.get("perception", {}):
            raise ConfigError("deploy.poses=estimator: this job has no perception result (run the perception stage "
                              "first, or deploy.poses=bridge)")
        estimator = ctx.results["perception"]["estimator"]
    # the executor weighs the live chunks as the job's evaluations and refine rollouts did: one rate, one meaning
    rate = ctx.config.eval.temporal_ensemble
    executor = {"ensemble_rate": rate} if cfg.mode == "ensemble" and rate is not None else {}
    result = run_deploy(path, ctx.out_dir / "deploy", episodes=cfg.episodes, mode=cfg.mode, backend=cfg.backend,
                        rate_hz=cfg.rate_hz, timeout_s=cfg.timeout_s, domain_id=cfg.ros_domain_id,
                        objects_task=objects_task, first_seed=seed_range(ctx.config.eval.seed_range).start,
                        pose_estimator=estimator, pose_smoothing=cfg.pose_smoothing, **executor)
    recs = result["records"]

    def worst(key: str) -> float | None:
        vals = [r[key] for r in recs if r[key] is not None]
        return max(vals) if vals else None

    return {"policy": cfg.policy, "mode": cfg.mode, "backend": cfg.backend,
            **({"ensemble rate": executor["ensemble_rate"]} if executor else {}),
            "inputs": ("cameras + joint states" + (" + object poses from the pose node (camera images)" if estimator
                       else " + the simulator's object poses (the bridge's ground truth)" if objects_task else "")),
            "reads simulator state": bool(objects_task) and not estimator,
            "success": result["success"],
            "steps": round(sum(r["steps"] for r in recs) / len(recs), 1),
            "wall s": round(sum(r["wall_s"] for r in recs) / len(recs), 2),
            "starved ticks": worst("starved_ticks"), "jitter p99 ms": worst("jitter_p99_ms"),
            "commands rejected": sum(r["commands_rejected"] for r in recs),
            # a node whose inference hung was replaced (policy_node.log holds its threads' stacks)
            **({"policy node restarts": result["policy_node_restarts"]} if result["policy_node_restarts"] else {}),
            # the pose node's live error against the bridge's truth of the same ticks (only measured)
            **{k.replace("_", " "): v for k, v in result.items() if k.startswith("pose_")},
            "dir": str(ctx.out_dir / "deploy"), "seconds": result["seconds"]}
