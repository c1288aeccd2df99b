"""`vla run`: the stack's main job, stage by stage, ending with a table of what it did and measured.

Stages run in order and each records figures in `summary.json`. Today: demos (scripted experts in
simulation when a sim task is named, else synthetic episodes), statistics, LeRobot v3 export and
re-import check, and a data-loader throughput check. Later capabilities add their stages
(pretrain, export, evaluate, refine, deploy) to `STAGES` and the default preset.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from vla.config import ConfigError, load_config
from vla.data.schema import closest
from vla.registry import STAGES
from vla.report import Media, write_report


@dataclass
class DemoStageConfig:
    task: str = "pick_place"  # a registered sim task (stage sim_demos), or "synthetic" (stage demos)
    episodes: int = 40
    image_size: int = 84
    workers: int = 2
    # expert action noise; with label=clean the recorded action is the expert's own (DART): the demos
    # show the way back from the small drifts a learned policy makes
    noise: float = 0.0
    label: str = "noisy"  # noisy | clean (see sim.evaluate.EvalConfig.label)
    # cap on the expert's rotation action (native tasks; sim.evaluate.EvalConfig.expert_rot_speed)
    rot_speed: float | None = None
    # the expert's feedback gain (native tasks; sim.evaluate.EvalConfig.expert_gain); None = 1.5
    gain: float | None = None
    # chance per demo that the expert lets go of the carried object once and picks it up again
    # (native tasks; sim.evaluate.EvalConfig.expert_drop; needs label=clean)
    drop: float = 0.0
    # chance per demo of a sideways push as the hand comes down to grasp, after which the expert centres again
    # (native tasks; sim.evaluate.EvalConfig.expert_drift; needs label=clean)
    drift: float = 0.0
    # Gaussian noise of this fraction of full scale on the expert's executed rotation, every step (native tasks;
    # sim.evaluate.EvalConfig.expert_rot_noise; needs label=clean)
    rot_noise: float = 0.0
    # the expert turns the hand only once it hovers over the object (native tasks;
    # sim.evaluate.EvalConfig.expert_turn_late)
    turn_late: bool = False
    # image: proprioception + cameras; state: the object poses too (native tasks keep their cameras),
    # the observation of a robot with a pose estimator. Every stage that makes the task uses it (eval,
    # refine, imagine), and deploy has the bridge publish the poses and the policy node read them.
    obs_mode: str = "image"
    # the demos recorded through a real arm's sensor errors (vla.perturb; e.g. realistic): the expert acts
    # on the truth, the store keeps what the robot would have sensed, so the policy learns to act from
    # noisy, late, re-lit and shifted inputs (domain randomisation in collection). Action kinds delay or
    # disturb the expert's commands; the recorded action stays its command
    perturb: str = "none"
    # domain randomisation in collection (vla.perturb): every demo draws each kind's severity from [0, SPEC's]
    # (e.g. realistic: clean to a decent lab's errors, camera pose, lighting, colours, latencies); kinds
    # that do not apply to obs_mode are left out. Not with perturb
    randomize: str = "none"


@dataclass
class LerobotStageConfig:
    # the first N episodes go through the export / re-import check (0 = all): the check is of the
    # format, and a whole store's AV1 encoding is a minute per 400 episodes on 2 cores
    episodes: int = 0


@dataclass
class LoaderStageConfig:
    obs_horizon: int = 2
    action_horizon: int = 16
    batch_size: int = 64
    workers: int = 2
    seconds: float = 10.0


@dataclass
class VisionStageConfig:
    """Stage `vision_pretrain` (sim/vision_pretrain.py): the camera encoders first learn the task's
    object pose and goal from the simulator's privileged state; `pretrain` starts from them and keeps
    learning those labelled frames beside the demos (train.init_weights, train.perception_frames)."""

    episodes: int = 1000  # expert episodes from the collect range's offset 500000 (apart from the demos')
    every: int = 4  # every N-th frame of an episode
    steps: int = 3000


@dataclass
class PretrainStageConfig:
    policy: str = "tiny"
    train: str = "default"
    steps: int = 2000
    batch_size: int = 32
    overrides: list[str] = field(default_factory=list)  # e.g. ["policy.d_model=64", "train.lr=1e-3"]


@dataclass
class EvalStageConfig:
    episodes: int = 20
    workers: int = 2
    n_action_steps: int = 8
    # a chunk every step, executed as the weighted mean of every chunk's prediction for it (the rate;
    # sim.evaluate.EvalConfig.temporal_ensemble); None: n_action_steps of each chunk. The refine stage's
    # rollouts and evaluations run the same way
    temporal_ensemble: float | None = None
    temporal_ensemble_every: int = 1  # with temporal_ensemble: a new chunk every this many steps
    # what computes the chunks of every evaluation and rollout the job runs in simulation (eval, refine,
    # robustness, perception): torch, or the checkpoint's ONNX export (vla.evaluation.ChunkSettings.runtime)
    runtime: str = "torch"
    onnx: bool = True  # evaluate in the other runtime as well (the export's check)
    onnx_episodes: int = 0  # that check on the first N of the same seeds; 0: all `episodes`
    # the protocol range (vla.protocol) of every evaluation the job reports (eval, refine, imagine, deploy):
    # report for its figures; tune in a job whose settings are being chosen
    seed_range: str = "report"


@dataclass
class RefineStageConfig:
    method: str = "habc"  # a registered refinement method (vla/refine/methods/, worldmodel/)
    iterations: int = 1
    episodes_per_iteration: int = 10  # rollouts collected with the intervener per iteration
    eval_episodes: int = 20
    eval_every: int = 1  # evaluate every k-th round's policy and the last (the pretrained one is the eval stage's)
    train_steps: int = 500
    workers: int = 2
    overrides: list[str] = field(default_factory=list)  # refine config overrides, e.g. ["method_args.beta=0.5"]


@dataclass
class ImagineStageConfig:
    """Stage `imagine` (sim/stages.py): one round of imagination refinement (worldmodel/imagination_refine.py)."""

    episodes_per_iteration: int = 10  # real rollouts without a person: start states, and the model's data
    eval_episodes: int = 50
    train_steps: int = 500
    workers: int = 2
    wm_steps: int = 600  # the world model's training steps on the job's demos and those rollouts
    starts: int = 64  # real start states
    samples: int = 8  # chunks sampled per start and scored through the model
    keyframes: list[float] = field(default_factory=lambda: [0.0, 0.15, 0.3, 0.45, 0.6, 0.75])
    wm_overrides: list[str] = field(default_factory=list)  # on the `cameras` world-model preset
    overrides: list[str] = field(default_factory=list)  # refine config overrides, e.g. ["method_args.beta=0.5"]


@dataclass
class RobustnessStageConfig:
    """Stage `robustness` (sim/stages.py): success of the job's policy against the severity of a real arm's
    sensor and actuator errors (vla.perturb), on the eval stage's seeds and execution."""

    policy: str = "refined"  # refined (the refine stage's last checkpoint) | pretrained
    perturb: str = "realistic"  # a preset or NAME:SEVERITY,... (vla.perturb)
    factors: list[float] = field(default_factory=lambda: [0.0, 0.5, 1.0, 2.0])  # every severity times these
    episodes: int = 100


@dataclass
class PerceptionStageConfig:
    """Stage `perception` (sim/perception_stage.py): the pose estimator a deployment reads instead of the
    simulator's poses (vla.perception). Expert episodes of the task (collect range, apart from the demos')
    with visual domain randomisation, labelled by their states; `vla perception train` on them; its error
    on fresh episodes of the eval range."""

    episodes: int = 300
    skill: float = 0.6  # the expert's skill (sim.evaluate.EvalConfig.skill): fumbles show the cube in more places
    randomize: str = ("camera_shift:10,camera_rot:2,surface_colour:0.1,distractor:0.3,lighting:0.2,colour:0.05,"
                      "blur:0.5,pixel_noise:3")
    steps: int = 2000
    # the deployed policy's (deploy.policy) rollouts under the same randomisation, recorded with their true poses
    # beside the expert's episodes: frames of the hand where the policy puts it, which under a real arm's command
    # noise is not where the expert does (0: the expert's only)
    policy_rollouts: int = 0
    eval_episodes: int = 50
    overrides: list[str] = field(default_factory=list)  # perception config overrides, e.g. ["channels=[16,32]"]
    # the deployed policy (deploy.policy) on the estimator's poses on the first this many of the eval seeds,
    # paired with its ground-truth result on them (0: not measured)
    policy_episodes: int = 100
    smoothing: float = 1.0  # the static objects' smoothing in that evaluation (deploy.pose_smoothing's meaning)


@dataclass
class DeployStageConfig:
    episodes: int = 1  # episodes run over ROS 2 against the MuJoCo robot bridge
    # where an obs_mode=state policy's object poses come from: bridge (the simulator's ground truth, for tests
    # and oracles) or estimator (the perception stage's pose node over the bridge's camera images; the
    # bridge then publishes no poses)
    poses: str = "bridge"
    pose_smoothing: float = 1.0  # with poses=estimator: the pose node's smoothing of static objects (1: off)
    policy: str = "pretrained"  # pretrained | refined (the refine stage's last policy, exported to ONNX here)
    mode: str = "ensemble"  # executor mode: sync | naive_async | aligned | rtc | ensemble (the preset's, ensemble.md)
    backend: str = "onnx"  # onnx | torch
    rate_hz: float = 20.0
    timeout_s: float = 180.0
    ros_domain_id: int = 77


@dataclass
class JobConfig:
    out_dir: str = "runs/main"
    # false: keep the folder and the figures of its earlier stages (summary.json, media.json), so that
    # `stages=[imagine]` adds one stage to a finished job: the later stages find the earlier ones' results
    overwrite: bool = True
    stages: list[str] = field(default_factory=lambda: ["sim_demos", "stats", "lerobot", "loader", "pretrain",
                                                       "export", "eval"])
    demos: DemoStageConfig = field(default_factory=DemoStageConfig)
    lerobot: LerobotStageConfig = field(default_factory=LerobotStageConfig)
    loader: LoaderStageConfig = field(default_factory=LoaderStageConfig)
    vision: VisionStageConfig = field(default_factory=VisionStageConfig)
    pretrain: PretrainStageConfig = field(default_factory=PretrainStageConfig)
    eval: EvalStageConfig = field(default_factory=EvalStageConfig)
    refine: RefineStageConfig = field(default_factory=RefineStageConfig)
    imagine: ImagineStageConfig = field(default_factory=ImagineStageConfig)
    robustness: RobustnessStageConfig = field(default_factory=RobustnessStageConfig)
    perception: PerceptionStageConfig = field(default_factory=PerceptionStageConfig)
    deploy: DeployStageConfig = field(default_factory=DeployStageConfig)

    def _runs_before(self, first: str, then: str) -> bool:
        """Whether stage `first` runs before `then`; with overwrite=false a `first` left out of stages may
        be the finished job's (its stage then finds it in the results, or says it is missing)."""
        if first not in self.stages:
            return not self.overwrite
        return self.stages.index(first) < self.stages.index(then)

    def validate(self) -> None:
        """At load, so that a wrong value fails before a quarter of an hour of earlier stages."""
        for stage_name in self.stages:
            # the key is named: this runs after the merge, which no longer knows the override it came from
            if not isinstance(stage_name, str):
                raise ConfigError(f"key 'stages': each entry must be a stage name, got {stage_name!r}")
            if stage_name not in STAGES.names():
                raise ConfigError(f"key 'stages': unknown stage '{stage_name}'" + closest(stage_name, STAGES.names()))
        if self.demos.obs_mode not in ("image", "state"):
            raise ConfigError(f"demos.obs_mode must be image or state, got '{self.demos.obs_mode}'")
        if self.demos.label not in ("noisy", "clean"):
            raise ConfigError(f"demos.label must be noisy or clean, got '{self.demos.label}'")
        if self.deploy.policy not in ("pretrained", "refined"):
            raise ConfigError(f"deploy.policy must be pretrained or refined, got '{self.deploy.policy}'")
        if self.eval.seed_range not in ("tune", "report"):
            raise ConfigError(f"eval.seed_range must be tune or report (vla.protocol), got '{self.eval.seed_range}'")
        if self.lerobot.episodes < 0:
            raise ConfigError(f"lerobot.episodes must be >= 0 (0 = all), got {self.lerobot.episodes}")
        if self.eval.temporal_ensemble_every < 1:
            raise ConfigError(f"eval.temporal_ensemble_every must be >= 1, got {self.eval.temporal_ensemble_every}")
        from vla.evaluation import RUNTIMES

        if self.eval.runtime not in RUNTIMES:
            raise ConfigError(f"eval.runtime must be one of {', '.join(RUNTIMES)}, got '{self.eval.runtime}'"
                              + closest(self.eval.runtime, RUNTIMES))
        if self.eval.onnx_episodes < 0:
            raise ConfigError(f"eval.onnx_episodes must be >= 0 (0 = all of eval.episodes), "
                              f"got {self.eval.onnx_episodes}")
        from vla.perturb import parse_perturb

        for key, spec in (("demos.perturb", self.demos.perturb), ("demos.randomize", self.demos.randomize),
                          ("robustness.perturb", self.robustness.perturb)):
            try:
                parse_perturb(spec)
            except ValueError as e:
                raise ConfigError(f"{key}: {e}") from None
        if parse_perturb(self.demos.perturb) and parse_perturb(self.demos.randomize):
            raise ConfigError(f"demos.perturb ({self.demos.perturb}) and demos.randomize ({self.demos.randomize}) "
                              "are both set; the demos take one of them")
        if self.robustness.policy not in ("pretrained", "refined"):
            raise ConfigError(f"robustness.policy must be pretrained or refined, got '{self.robustness.policy}'")
        if self.robustness.episodes < 1 or not self.robustness.factors:
            raise ConfigError("robustness needs episodes >= 1 and at least one factor, got "
                              f"{self.robustness.episodes} and {self.robustness.factors}")
        if "robustness" in self.stages and self.robustness.policy == "refined" and \
                not self._runs_before("refine", "robustness"):
            raise ConfigError("robustness.policy=refined needs the refine stage before robustness in stages "
                              "(or robustness.policy=pretrained)")
        if not 0 < self.deploy.pose_smoothing <= 1:
            raise ConfigError(f"deploy.pose_smoothing must be in (0, 1] (1: off), got {self.deploy.pose_smoothing}")
        if self.deploy.poses not in ("bridge", "estimator"):
            raise ConfigError(f"deploy.poses must be bridge or estimator, got '{self.deploy.poses}'")
        if "deploy" in self.stages and self.deploy.poses == "estimator":
            if self.demos.obs_mode != "state":
                raise ConfigError("deploy.poses=estimator: the policy reads no object poses (demos.obs_mode=image)")
            if not self._runs_before("perception", "deploy"):
                raise ConfigError("deploy.poses=estimator needs the perception stage before deploy in stages")
        if self.perception.policy_episodes < 0 or self.perception.policy_rollouts < 0 or \
                not 0 < self.perception.smoothing <= 1:
            raise ConfigError("perception needs policy_episodes >= 0, policy_rollouts >= 0 and 0 < smoothing <= 1, "
                              f"got {self.perception.policy_episodes}, {self.perception.policy_rollouts}, "
                              f"{self.perception.smoothing}")
        if self.perception.episodes < 2 or self.perception.steps < 1 or self.perception.eval_episodes < 1:
            raise ConfigError("perception needs episodes >= 2, steps >= 1 and eval_episodes >= 1, got "
                              f"{self.perception.episodes}, {self.perception.steps}, {self.perception.eval_episodes}")
        try:
            parse_perturb(self.perception.randomize)
        except ValueError as e:
            raise ConfigError(f"perception.randomize: {e}") from None
        if "perception" in self.stages and (self.perception.policy_episodes or self.perception.policy_rollouts) \
                and self.deploy.policy == "refined" and not self._runs_before("refine", "perception"):
            raise ConfigError("perception.policy_episodes and policy_rollouts run deploy.policy=refined, which needs "
                              "the refine stage before perception in stages (or set both to 0, or "
                              "deploy.policy=pretrained)")
        if "deploy" in self.stages and self.deploy.policy == "refined" and not self._runs_before("refine", "deploy"):
            raise ConfigError("deploy.policy=refined needs the refine stage before deploy in stages "
                              "(or deploy.policy=pretrained)")


@dataclass
class JobContext:
    config: JobConfig
    out_dir: Path
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    media: dict[str, list[Media]] = field(default_factory=dict)  # the report's plots and videos, by stage

    def attach(self, stage_name: str, kind: str, paths: Any, caption: str = "") -> None:
        """Show `paths` (one or several plots or videos) under `stage_name` in the job's report."""
        for p in [paths] if isinstance(paths, str | Path) else paths:
            self.media.setdefault(stage_name, []).append(Media(kind, str(p), caption or Path(p).stem))

    @property
    def store_path(self) -> Path:
        return self.out_dir / "demos.zarr"

    @property
    def checkpoint(self) -> Path:
        """The pretrained checkpoint (set by the pretrain stage)."""
        path = self.results.get("pretrain", {}).get("checkpoint")
        if not path:
            raise ConfigError("this stage needs a checkpoint: put 'pretrain' before it in stages")
        return Path(path)


StageFn = Callable[[JobContext], dict[str, Any]]


def stage(name: str) -> Callable[[StageFn], StageFn]:
    return STAGES.register(name)


@stage("demos")
def demos_stage(ctx: JobContext) -> dict[str, Any]:
    from vla.data.store import EpisodeStore
    from vla.data.synthetic import default_schema, synthetic_episode
    from vla.progress import progress as tqdm

    cfg = ctx.config.demos
    t0 = time.perf_counter()
    if cfg.task != "synthetic":
        raise ConfigError(f"stage 'demos' writes synthetic episodes (demos.task=synthetic); for the sim task "
                          f"'{cfg.task}' use the stage 'sim_demos'")
    store = EpisodeStore.create(ctx.store_path, default_schema(image_size=cfg.image_size), overwrite=True)
    for seed in tqdm(range(cfg.episodes), desc="demos (synthetic)"):
        store.append_episode(synthetic_episode(store.schema, seed))
    seconds = time.perf_counter() - t0
    return {"store": str(ctx.store_path), "episodes": store.n_episodes, "steps": store.n_steps,
            "MB on disk": round(store.nbytes_on_disk() / 1e6, 1), "seconds": round(seconds, 1)}


@stage("stats")
def stats_stage(ctx: JobContext) -> dict[str, Any]:
    from vla.data.store import EpisodeStore

    t0 = time.perf_counter()
    stats = EpisodeStore.open(ctx.store_path).stats()
    (ctx.out_dir / "stats.json").write_text(json.dumps({k: v.to_json() for k, v in stats.items()}, indent=1))
    return {"keys": len(stats), "file": str(ctx.out_dir / "stats.json"),
            "seconds": round(time.perf_counter() - t0, 2)}


@stage("lerobot")
def lerobot_stage(ctx: JobContext) -> dict[str, Any]:
    import numpy as np

    from vla.data.lerobot import export_lerobot, import_lerobot
    from vla.data.store import EpisodeStore

    store = EpisodeStore.open(ctx.store_path)
    out = ctx.out_dir / "lerobot"
    back_path = ctx.out_dir / "reimported.zarr"
    for p in (out, back_path):
        shutil.rmtree(p, ignore_errors=True)
    n_eps = min(ctx.config.lerobot.episodes or store.n_episodes, store.n_episodes)
    t0 = time.perf_counter()
    export_lerobot(store, out, episodes=list(range(n_eps)))
    t_export = time.perf_counter() - t0
    back = import_lerobot(out, back_path)
    t_import = time.perf_counter() - t0 - t_export
    n = back.n_steps  # the exported episodes are the store's first ones: the same first n steps
    exact = all(np.array_equal(store.read(k, 0, n), back.read(k, 0, n))
                for k in ("state", "action", "reward", "is_intervention", "is_recovery", "policy_version"))
    cam = next(iter(store.schema.cameras))
    diff = np.abs(store.read(f"images/{cam}", 0, n).astype(np.int16) - back.read(f"images/{cam}", 0, n))
    return {"dir": str(out), "episodes": f"{n_eps} of {store.n_episodes}", "export s": round(t_export, 1),
            "import s": round(t_import, 1),
            "low-dim exact": exact, f"{cam} mean abs px err": round(float(diff.mean()), 2)}


@stage("loader")
def loader_stage(ctx: JobContext) -> dict[str, Any]:
    from vla.data.dataset import WindowDataset

    cfg = ctx.config.loader
    ds = WindowDataset(ctx.store_path, obs_horizon=cfg.obs_horizon, action_horizon=cfg.action_horizon)
    loader = ds.loader(cfg.batch_size, shuffle=True, num_workers=cfg.workers, seed=0)
    windows, t0 = 0, None
    while t0 is None or time.perf_counter() - t0 < cfg.seconds:
        for batch in loader:
            if t0 is None:  # worker start-up is not throughput
                t0 = time.perf_counter()
                continue
            windows += len(batch["action"])
            if time.perf_counter() - t0 >= cfg.seconds:
                break
    return {"windows/s": round(windows / (time.perf_counter() - t0)), "workers": cfg.workers,
            "batch": cfg.batch_size}


@stage("pretrain")
def pretrain_stage(ctx: JobContext) -> dict[str, Any]:
    from vla.policy.model import count_parameters
    from vla.train.pretrain import run_training

    cfg = ctx.config.pretrain
    t0 = time.perf_counter()
    overrides = [f"train.steps={cfg.steps}", f"train.batch_size={cfg.batch_size}",
                 f"train.ckpt_every={cfg.steps}", f"train.val_every={max(cfg.steps // 4, 1)}", *cfg.overrides]
    vision = ctx.results.get("vision_pretrain", {})
    for key, value in (("init_weights", vision.get("weights")), ("perception_frames", vision.get("frames file"))):
        if value and not any(o.startswith(f"train.{key}=") for o in cfg.overrides):
            overrides.insert(0, f"train.{key}={value}")
    out = ctx.out_dir / "train"
    result = run_training(ctx.store_path, out, cfg.policy, cfg.train, overrides)
    from vla.policy.checkpoint import load_model

    model, _ = load_model(result.last_checkpoint)
    losses = list(result.losses.values())
    seconds = time.perf_counter() - t0
    return {"checkpoint": str(result.last_checkpoint), "policy": cfg.policy,
            "params": f"{count_parameters(model) / 1e6:.2f}M", "steps": result.steps_done,
            "loss first/last": f"{losses[0]:.3f}/{losses[-1]:.3f}",
            "val loss": round(list(result.val_losses.values())[-1], 4) if result.val_losses else None,
            "samples/s": round(result.steps_done * cfg.batch_size / seconds), "tensorboard": str(out / "tb"),
            "seconds": round(seconds, 1)}


@stage("export")
def export_stage(ctx: JobContext) -> dict[str, Any]:
    t0 = time.perf_counter()
    out = export_checkpoint(ctx, ctx.checkpoint)
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    return {"onnx": str(out), "MB": round(size, 1), "seconds": round(time.perf_counter() - t0, 1)}


def export_checkpoint(ctx: JobContext, ckpt: Path) -> Path:
    """ONNX export of a checkpoint into `ckpt/onnx`, its cameras at the job's demo image sizes (the one an
    evaluation with runtime=onnx already made is kept)."""
    from vla.data.store import EpisodeStore
    from vla.policy.checkpoint import load_config as load_policy_config
    from vla.policy.export import runtime_export

    schema = EpisodeStore.open(ctx.store_path).schema
    return runtime_export(ckpt, {c: schema.cameras[c] for c in load_policy_config(ckpt).cameras})


def run_job(config: JobConfig) -> dict[str, dict[str, Any]]:
    out_dir = Path(config.out_dir)
    if out_dir.exists() and config.overwrite:
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console()
    results: dict[str, dict[str, Any]] = {}
    media: dict[str, list[Media]] = {}
    if not config.overwrite:
        results, media = load_job(out_dir)
        kept = adopt_recorded(config, out_dir, [n for n in results if n not in config.stages])
        if kept:
            console.print(f"settings of the stages already run, from {out_dir}/job.json: {', '.join(kept)}")
    ctx = JobContext(config, out_dir, results, media)
    (out_dir / "job.json").write_text(json.dumps(asdict(config), indent=1))
    for name in config.stages:
        console.rule(f"stage: {name}")
        t0 = time.perf_counter()
        ctx.results[name] = STAGES.get(name)(ctx)
        ctx.results[name].setdefault("seconds", round(time.perf_counter() - t0, 1))
        (out_dir / "summary.json").write_text(json.dumps(ctx.results, indent=1))
        (out_dir / "media.json").write_text(json.dumps({k: [vars(m) for m in v] for k, v in ctx.media.items()}))
        report = write_report(out_dir / "report.html", f"vla run: {out_dir}", ctx.results, ctx.media)
    table = Table(title=f"vla run: {out_dir}/summary.json")
    table.add_column("stage")
    table.add_column("what it did and measured")
    for name, figures in ctx.results.items():
        table.add_row(name, ", ".join(f"{k}: {v}" for k, v in figures.items()))
    console.print(table)
    if config.stages:
        console.print(f"report (open in a browser): {report.resolve()}")
    return ctx.results


def load_job(out_dir: Path) -> tuple[dict[str, dict[str, Any]], dict[str, list[Media]]]:
    """The results and report media of the stages a job in `out_dir` has run ({} when none)."""
    def read(path: Path, parse: Callable[[Any], Any]) -> Any:
        try:
            return parse(json.loads(path.read_text())) if path.exists() else {}
        except (ValueError, TypeError, AttributeError) as e:
            raise ConfigError(f"{path}: not a job's record ({e}); run with overwrite=true to start the job "
                              "afresh") from None

    results = read(out_dir / "summary.json", lambda d: {str(k): dict(v) for k, v in d.items()})
    media = read(out_dir / "media.json", lambda d: {str(k): [Media(**m) for m in v] for k, v in d.items()})
    return results, media


# the config section each stage reads (a stage not named here reads none of its own)
STAGE_SECTION = {"demos": "demos", "sim_demos": "demos", "lerobot": "lerobot", "loader": "loader",
                 "vision_pretrain": "vision", "pretrain": "pretrain", "eval": "eval", "refine": "refine",
                 "imagine": "imagine", "deploy": "deploy"}


def adopt_recorded(config: JobConfig, out_dir: Path, done: list[str]) -> list[str]:
    """Extending a job: the sections of the stages it already ran take the values they ran with
    (job.json), since their outputs on disk were made with them; returns the sections adopted."""
    record = out_dir / "job.json"
    if not record.exists():
        return []
    recorded = load_config(JobConfig, "job", None, values=json.loads(record.read_text()))
    sections = sorted({STAGE_SECTION[n] for n in done if n in STAGE_SECTION})
    for name in sections:
        setattr(config, name, getattr(recorded, name))
    return sections


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(preset: str = typer.Option("default", help="preset of configs/job/ or a YAML path"),
            overrides: list[str] = typer.Argument(None, help="key=value overrides, e.g. demos.episodes=10")) -> None:
        """The main job: every stage of the loop that exists, ending with a summary table."""
        run_job(load_config(JobConfig, "job", preset, overrides or []))
