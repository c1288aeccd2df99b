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

import json
import shutil
import warnings
from collections.abc import Sequence
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
from vla.policy.config import PolicyConfig
from vla.policy.language import EMBED_DIM, InstructionEncoder
from vla.policy.model import VLAModel, check_prefix
from vla.policy.observation import ObservationHistory

EXPORT_FORMAT, EXPORT_VERSION = "vla-policy-onnx", 1


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
    torch.onnx.export(module.eval(), args, str(path), dynamo=True, input_names=names, output_names=outputs,
                      dynamic_shapes=dims, opset_version=opset, verbose=False)


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
    (out / "runtime.json").write_text(json.dumps(meta, indent=2))
    if folder is not None and (folder / "instructions.safetensors").exists():
        shutil.copy2(folder / "instructions.safetensors", out / "instructions.safetensors")
    else:
        write_instruction_table(out / "instructions.safetensors", model.language.cached(), model.instruction_groups)
    return out


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
        meta_file = self.folder / "runtime.json"
        if not meta_file.is_file():
            raise CheckpointError(f"ONNX export file missing: {meta_file}")
        meta: dict[str, Any] = json.loads(meta_file.read_text())
        if meta.get("format") != EXPORT_FORMAT:
            raise CheckpointError(f"{meta_file} is not a {EXPORT_FORMAT} export")
        self.cfg = PolicyConfig.from_dict(meta["policy"])
        self.cfg.with_noise_scale(noise_scale)
        self.meta = meta
        available = ort.get_available_providers()
        wanted = providers or ["CUDAExecutionProvider", "CPUExecutionProvider"]
        self.providers = [p for p in wanted if p in available] or ["CPUExecutionProvider"]
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0 = ONNX Runtime's default (one per core)
        sessions = []
        for name in ("encoder.onnx", "step.onnx"):
            path = self.folder / name
            if not path.is_file():
                raise CheckpointError(f"ONNX export file missing: {path}")
            try:
                sessions.append(ort.InferenceSession(str(path), options, providers=self.providers))
            except Exception as e:  # onnxruntime raises its own exception types for a bad file
                raise CheckpointError(f"ONNX file is corrupt or unreadable: {path} ({e})") from e
        self.encoder, self.step = sessions
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
