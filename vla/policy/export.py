"""ONNX export of the policy as two graphs, and an ONNX Runtime policy with the same protocol.

    encoder.onnx  raw observation (uint8 images per camera, state, obs_mask, language vector)
                  -> context tokens + mask  (image/state normalisation inside the graph)
    step.onnx     (x, per-position tau, context, mask) -> velocity
    runtime.json  config, input names, action centre/scale, format version
    instructions.safetensors  cached instruction embeddings and phrasing groups (as in the checkpoint)

Why two graphs and not one unrolled loop: the K Euler steps, the committed prefix and the guidance
hook stay in (numpy) Python, so the ONNX policy supports `prefix` and `guidance` exactly like the
torch one, and one encoder pass serves all K steps. The cost is K + 1 session calls per chunk.

Parity: with the same noise, ONNX Runtime CPU (fp32) reproduces torch within 1e-4 in action
units on our tests (error compounds over the K steps; per-graph differences are ~1e-6). With
`fp16=True` weights and activations are float16 (I/O stays float32), meant for the CUDA
provider; expect ~1e-2.

Instructions unknown to the export fall back to the MiniLM encoder (`vla.policy.language`,
which needs torch); deployments that only use known instructions never load it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.interfaces import GuidanceFn, Observation
from vla.policy import flow
from vla.policy.checkpoint import (
    CheckpointError,
    load_instructions,
    load_model,
    write_instruction_table,
)
from vla.policy.checkpoint import (
    load_config as load_model_config,
)
from vla.policy.config import PolicyConfig
from vla.policy.language import EMBED_DIM, InstructionEncoder
from vla.policy.model import VLAModel, check_prefix
from vla.policy.observation import ObservationHistory

EXPORT_FORMAT, EXPORT_VERSION = "vla-policy-onnx", 1
RUNTIME_META = "runtime.json"
# The graphs' input and output names, as `export_onnx` writes them and `OnnxPolicy` feeds them (the encoder
# has an `image_<i>` input per camera after these).
ENCODER_IO = (["state", "obs_mask", "lang"], ["context", "context_mask"])
STEP_IO = (["x", "tau", "context", "context_mask"], ["velocity"])


class _Encoder(torch.nn.Module):
    def __init__(self, model: VLAModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, state: torch.Tensor, obs_mask: torch.Tensor, lang: torch.Tensor,
                images: list[torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.encode(images or [], state, obs_mask, lang)


class _Step(torch.nn.Module):
    def __init__(self, model: VLAModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, tau: torch.Tensor, context: torch.Tensor,
                context_mask: torch.Tensor) -> torch.Tensor:
        return self.model.velocity(x, tau, context, context_mask)


def _export(module: torch.nn.Module, args: tuple[Any, ...], path: Path, names: list[str],
            outputs: list[str], opset: int) -> None:
    batch = torch.export.Dim("batch", min=1, max=4096)
    # The batch dimension is dynamic for every input (a list input: for each of its tensors).
    dims = tuple([{0: batch}] * len(a) if isinstance(a, list) else {0: batch} for a in args)
    with _quiet_exporter():
        torch.onnx.export(module.eval(), args, str(path), dynamo=True, input_names=names, output_names=outputs,
                          dynamic_shapes=dims, opset_version=opset, verbose=False)


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """torch's exporter warns about torchvision ops it skips (we use none), a deprecated pytree class and a
    dynamic axis it merges: lines a user cannot act on. VLA_VERBOSE=1 (`vla --verbose`) keeps them."""
    if os.environ.get("VLA_VERBOSE") == "1":
        yield
        return
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, message=r".*LeafSpec.*")
            warnings.filterwarnings("ignore", category=UserWarning, message=r"# The axis name: .*")
            yield
    finally:
        logger.setLevel(level)


def _to_fp16(path: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(str(path))
    onnx.save(convert_float_to_float16(model, keep_io_types=True), str(path))


def export_onnx(source: str | Path | VLAModel, out_dir: str | Path, camera_sizes: dict[str, tuple[int, int]]
                | None = None, fp16: bool = False, opset: int = 18, use_ema: bool = True) -> Path:
    """Export a checkpoint folder (or a model) to `out_dir`. Image inputs have the fixed sizes of
    `camera_sizes` (default: the config's image_size); the batch dimension is dynamic."""
    if isinstance(source, VLAModel):
        model, folder = source, None
    else:
        folder = Path(source)
        model, _ = load_model(folder, use_ema=use_ema)
    model = model.cpu().eval()
    cfg = model.cfg
    sizes = {c: tuple(camera_sizes.get(c, cfg.image_size)) if camera_sizes else cfg.image_size
             for c in cfg.cameras}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    b, to, h, a = 2, cfg.n_obs_steps, cfg.chunk_size, cfg.action_dim
    images = [torch.zeros(b, to, *sizes[c], 3, dtype=torch.uint8) for c in cfg.cameras]
    enc_args: tuple[Any, ...] = (torch.zeros(b, to, cfg.state_dim), torch.ones(b, to, dtype=torch.bool),
                                 torch.zeros(b, EMBED_DIM))
    if images:
        enc_args = (*enc_args, images)
    image_names = [f"image_{i}" for i in range(len(cfg.cameras))]
    with torch.no_grad():
        _export(_Encoder(model), enc_args, out / "encoder.onnx", ["state", "obs_mask", "lang", *image_names],
                ["context", "context_mask"], opset)
        context, cmask = model.encode(images, *enc_args[:3])
        _export(_Step(model), (torch.zeros(b, h, a), torch.zeros(b, h), context, cmask), out / "step.onnx",
                ["x", "tau", "context", "context_mask"], ["velocity"], opset)
    if fp16:
        _to_fp16(out / "encoder.onnx")
        _to_fp16(out / "step.onnx")
    norm = model.normalizer
    meta = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "policy": cfg.to_dict(), "fp16": fp16,
            "camera_sizes": {c: list(s) for c, s in sizes.items()}, "image_inputs": image_names,
            "action_center": norm.action_center.tolist(), "action_scale": norm.action_scale.tolist()}
    (out / RUNTIME_META).write_text(json.dumps(meta, indent=2))
    if folder is not None and (folder / "instructions.safetensors").exists():
        shutil.copy2(folder / "instructions.safetensors", out / "instructions.safetensors")
    else:
        write_instruction_table(out / "instructions.safetensors", model.language.cached(), model.instruction_groups)
    return out


def runtime_export(ckpt: str | Path, camera_sizes: int | Mapping[str, Sequence[int]]) -> Path:
    """`ckpt/onnx`, the checkpoint's export for ONNX Runtime with its cameras at `camera_sizes` (an int: every
    camera at that square size, as an evaluation's `runtime=onnx` gives them): made (from the EMA weights, as
    torch evaluates) when missing, older than the checkpoint's files or made for other camera sizes. Written
    beside and renamed into place, so nothing reads half of one (a reader in the instant between the two renames
    finds none)."""
    folder = Path(ckpt)
    out = folder / "onnx"
    cameras = load_model_config(folder).cameras
    sizes = {c: [int(v) for v in ((camera_sizes, camera_sizes) if isinstance(camera_sizes, int)
                                  else camera_sizes[c])] for c in cameras}
    newest = max(f.stat().st_mtime for f in folder.iterdir() if f.is_file())
    meta = out / RUNTIME_META
    if meta.is_file() and meta.stat().st_mtime >= newest:
        try:
            if json.loads(meta.read_text()).get("camera_sizes") == sizes:
                return out
        except (OSError, ValueError):
            pass  # unreadable: made again below
    tmp, old = folder / f".onnx.{os.getpid()}", folder / f".onnx.old.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    export_onnx(folder, tmp, camera_sizes={c: (h, w) for c, (h, w) in sizes.items()})
    if out.exists():
        os.replace(out, old)  # a rename, not a removal in place: a reader finds a whole export or none
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
    return out


def read_runtime(folder: str | Path) -> tuple[dict[str, Any], PolicyConfig]:
    """runtime.json of an ONNX export, checked: its format and version, the policy config, and the entries
    `OnnxPolicy` reads (camera sizes and image inputs per camera, a finite action centre and a finite,
    positive action scale per action dimension). A bad one is a `CheckpointError` naming the file and key."""
    path = Path(folder) / RUNTIME_META
    if not path.is_file():
        raise CheckpointError(f"ONNX export file missing: {path}")
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"ONNX export file is corrupt (invalid JSON): {path} ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != EXPORT_FORMAT:
        raise CheckpointError(f"{path} is not a {EXPORT_FORMAT} export")
    version = meta.get("version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        raise CheckpointError(f"{path}: format version {version!r}, this code reads integers <= {EXPORT_VERSION}")
    if not isinstance(meta.get("policy"), dict):
        raise CheckpointError(f"{path}: 'policy' must be the policy config (an object)")
    try:
        cfg = PolicyConfig.from_dict(meta["policy"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: invalid policy config ({e})") from None

    def need(ok: bool, msg: str) -> None:
        if not ok:
            raise CheckpointError(f"{path}: {msg}")

    sizes = meta.get("camera_sizes")
    need(isinstance(sizes, dict) and all(c in sizes for c in cfg.cameras),
         f"'camera_sizes' must give a size for each camera {cfg.cameras}, got {sizes!r}")
    for cam in cfg.cameras:
        size = sizes[cam]
        need(isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size),
             f"'camera_sizes.{cam}' must be [height, width] in pixels, got {size!r}")
    inputs = meta.get("image_inputs")
    need(isinstance(inputs, list) and len(inputs) == len(cfg.cameras) and all(isinstance(n, str) for n in inputs),
         f"'image_inputs' must name one graph input per camera ({len(cfg.cameras)}), got {inputs!r}")
    need(isinstance(meta.get("fp16", False), bool), f"'fp16' must be true or false, got {meta.get('fp16')!r}")
    for key in ("action_center", "action_scale"):
        value = meta.get(key)
        try:
            arr = np.asarray(value, np.float64)
        except (TypeError, ValueError):
            arr = np.zeros(0)
        need(arr.shape == (cfg.action_dim,), f"'{key}' must be {cfg.action_dim} numbers (action_dim), got {value!r}")
        need(bool(np.isfinite(arr).all()), f"'{key}' has non-finite values: {value}")
    need(bool((np.asarray(meta["action_scale"], np.float64) > 0).all()),
         f"'action_scale' must be > 0 (actions are divided by it), got {meta['action_scale']}")
    return meta, cfg


def _open_sessions(folder: Path, meta: dict[str, Any], cfg: PolicyConfig, options: Any, providers: list[str]
                   ) -> tuple[Any, Any]:
    """The encoder and step sessions, their inputs and outputs checked against runtime.json: a graph from
    another export, or one that does not load, is a `CheckpointError` naming its file."""
    import onnxruntime as ort

    wanted = {"encoder.onnx": ([*ENCODER_IO[0], *meta["image_inputs"]], ENCODER_IO[1]), "step.onnx": STEP_IO}
    # the last dimension of the inputs whose size runtime.json's config fixes
    last_dims = {"state": cfg.state_dim, "x": cfg.action_dim}
    sessions = []
    for name, (ins, outs) in wanted.items():
        path = folder / name
        if not path.is_file():
            raise CheckpointError(f"ONNX export file missing: {path}")
        try:
            session = ort.InferenceSession(str(path), options, providers=providers)
        except Exception as e:  # onnxruntime raises its own exception types for a bad file
            reason = " ".join(str(e).split())
            raise CheckpointError(f"ONNX file is corrupt or unreadable: {path} ({reason[:300]})") from None
        got_in = [i.name for i in session.get_inputs()]
        got_out = [o.name for o in session.get_outputs()]
        if sorted(got_in) != sorted(ins) or got_out != outs:
            raise CheckpointError(f"{path}: graph takes {got_in} and gives {got_out}, {RUNTIME_META} expects {ins} "
                                  f"and {outs} (a graph from another export?)")
        for i in session.get_inputs():
            want = last_dims.get(i.name)
            if want is not None and isinstance(i.shape[-1], int) and i.shape[-1] != want:
                raise CheckpointError(f"{path}: input '{i.name}' has last dimension {i.shape[-1]}, {RUNTIME_META}'s "
                                      f"policy config needs {want} (a graph from another export?)")
        sessions.append(session)
    return sessions[0], sessions[1]


def validate_export(folder: str | Path) -> PolicyConfig:
    """Everything `OnnxPolicy` checks when it loads an export, and that no weight in either graph is NaN or
    inf; for parents that hand the folder to worker processes (`vla eval`), so a damaged export is one
    `CheckpointError` naming the file before any worker starts. Returns the export's policy config."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    folder = Path(folder)
    meta, cfg = read_runtime(folder)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    _open_sessions(folder, meta, cfg, options, ["CPUExecutionProvider"])
    for name in ("encoder.onnx", "step.onnx"):
        path = folder / name
        try:
            graph = onnx.load(str(path)).graph
        except Exception as e:  # protobuf's DecodeError and onnx's own errors
            raise CheckpointError(f"ONNX file is corrupt or unreadable: {path} ({e})") from None
        for init in graph.initializer:
            values = numpy_helper.to_array(init)
            if values.dtype.kind == "f" and not np.isfinite(values).all():
                raise CheckpointError(f"{path}: weight '{init.name}' has non-finite values (NaN or inf)")
    load_instructions(folder)
    return cfg


def _env_threads() -> int:
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


class OnnxPolicy:
    """The `Policy` protocol on ONNX Runtime (CUDA provider when available, else CPU)."""

    def __init__(self, folder: str | Path, seed: int = 0, providers: list[str] | None = None,
                 language: InstructionEncoder | None = None, threads: int = 0,
                 noise_scale: float | None = None) -> None:
        import onnxruntime as ort

        import vla

        if vla.ORT_LOADED_FIRST:
            warnings.warn("onnxruntime was imported before vla, so its telemetry is on and will contact "
                          "mobile.events.data.microsoft.com: set ORT_DISABLE_TELEMETRY=1 or import vla first",
                          RuntimeWarning, stacklevel=2)

        self.folder = Path(folder)
        meta, self.cfg = read_runtime(self.folder)
        self.cfg.with_noise_scale(noise_scale)
        self.meta = meta
        available = ort.get_available_providers()
        wanted = providers or ["CUDAExecutionProvider", "CPUExecutionProvider"]
        self.providers = [p for p in wanted if p in available] or ["CPUExecutionProvider"]
        options = ort.SessionOptions()
        # 0: OMP_NUM_THREADS where set, else ONNX Runtime's default (a thread per core). ONNX Runtime does not read
        # OMP_NUM_THREADS itself, so each of the evaluator's K workers on K cores (which set it to 1) ran a pool
        # of K threads: 30 episodes of the job's policy on 2 workers took 22.3 s against 13.9 s with one thread
        # each (torch: 20.1 s)
        options.intra_op_num_threads = threads or _env_threads()
        self.encoder, self.step = _open_sessions(self.folder, meta, self.cfg, options, self.providers)
        self.center = np.asarray(meta["action_center"], np.float32)
        self.scale = np.asarray(meta["action_scale"], np.float32)
        self.language = language or InstructionEncoder()
        table, self.instruction_groups = load_instructions(self.folder)
        self.language.preload(table)
        self.history = ObservationHistory(self.cfg.cameras, self.cfg.state_dim, self.cfg.n_obs_steps)
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Clear the observation history and restart the sampling noise (from `seed` when given:
        the evaluator passes the episode's seed, so an episode does not depend on the worker)."""
        self.history.reset()
        if seed is not None:
            self.seed = seed
        self.rng = np.random.default_rng(self.seed)

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None, noise: np.ndarray | None = None) -> np.ndarray:
        cfg = self.cfg
        inputs = self.history.push(obs_batch)
        b, h, a = len(obs_batch), cfg.chunk_size, cfg.action_dim
        feed: dict[str, np.ndarray] = {"state": inputs.state, "obs_mask": inputs.obs_mask,
                                       "lang": self.language.encode(inputs.instructions)}
        for name, cam, img in zip(self.meta["image_inputs"], cfg.cameras, inputs.images, strict=True):
            want = tuple(self.meta["camera_sizes"][cam])
            if img.shape[2:4] != want:
                raise ValueError(f"images['{cam}'] are {img.shape[2]}x{img.shape[3]}, this ONNX export takes "
                                 f"{want[0]}x{want[1]} (re-export with camera_sizes)")
            feed[name] = img
        context, cmask = self.encoder.run(None, feed)
        x = (self.rng.standard_normal((b, h, a)) if noise is None else np.asarray(noise)).astype(np.float32)
        x *= np.float32(cfg.noise_scale)  # as VLAModel.sample_actions
        clean = np.zeros((b, h), bool)
        p = 0
        if prefix is not None:
            prefix = np.asarray(prefix, np.float32)
            p = check_prefix(prefix.shape, b, h, a)
            clean[:, :p] = True
            x[:, :p] = (prefix - self.center) / self.scale
        free = (~clean).astype(np.float32)[..., None]
        steps = cfg.num_steps
        dt = 1.0 / steps
        for t in flow.euler_times(steps):
            tau = np.where(clean, 1.0, t).astype(np.float32)
            (v,) = self.step.run(None, {"x": x, "tau": tau, "context": context, "context_mask": cmask})
            if guidance is not None:
                x1_hat = flow.clean_estimate(x, v, t) * self.scale + self.center
                delta = np.asarray(guidance(x1_hat, t), np.float32)
                if delta.shape != x.shape:
                    raise ValueError(f"guidance returned shape {delta.shape}, expected {x.shape}")
                v = v + flow.guidance_weight(t, cfg.guidance_max_weight) * delta / self.scale
            x = (x + dt * v * free).astype(np.float32)
        out = x * self.scale + self.center
        if prefix is not None:
            out[:, :p] = prefix
        return out.astype(np.float32)
