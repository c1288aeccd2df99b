"""Shared by the LeRobot compatibility checker's parts: the check record, exception guards, the
ground truth (`Truth`, `RefVideo`) and the comparison of one dataset item against it (`check_item`).
Runs in the lerobot venv, like checker.py."""

from __future__ import annotations

import importlib.metadata
import json
import traceback
from pathlib import Path

import numpy as np
import torch

CHECKS: list[dict] = []


def record(backend: str, name: str, ok: bool, detail: str = "") -> bool:
    # backend "native": LeRobot's own recording, a reference for our export, not a check of it.
    CHECKS.append({"backend": backend, "name": name, "ok": bool(ok), "detail": detail,
                   "reference": backend == "native"})
    print(f"[{'PASS' if ok else 'FAIL'}] ({backend}) {name}: {detail}", flush=True)
    return ok


def guarded(backend: str, name: str, fn) -> object:
    """Run fn(); a raised exception is a failed check carrying the traceback's last lines."""
    try:
        return fn()
    except Exception as e:  # every failure is a finding to report
        tb = traceback.format_exc()
        record(backend, name, False, f"{type(e).__name__}: {e}\n" + "\n".join(tb.strip().splitlines()[-12:]))
        return None


def attempt(fn) -> tuple[object, str | None]:
    """(fn(), None), or (None, the exception's first line) without recording a check."""
    try:
        return fn(), None
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else ""
        return None, f"{type(e).__name__}: {first.split(' It means')[0][:200]}"


def version(pkg: str) -> str:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def to_np(x) -> np.ndarray:
    return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def image_mae(got: torch.Tensor, want_hwc: np.ndarray) -> float:
    """Mean abs error in 0..255 units between LeRobot's float CHW [0,1] frame and our uint8 HWC frame."""
    g = to_np(got).astype(np.float64)
    if g.max() <= 1.0 + 1e-6:
        g = g * 255.0
    return float(np.abs(g - want_hwc.transpose(2, 0, 1).astype(np.float64)).mean())


class Truth:
    def __init__(self, npz: Path, meta: Path) -> None:
        self.arrays = dict(np.load(npz))
        self.meta = json.loads(meta.read_text())
        self.fps = float(self.meta["fps"])
        self.lengths = [int(n) for n in self.meta["lengths"]]
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(int).tolist()
        self.cameras = list(self.meta["cameras"])
        self.feature_of = self.meta["step_to_feature"]  # our step key -> LeRobot feature name

    @classmethod
    def subset(cls, truth: Truth, n_episodes: int) -> Truth:
        """The first n_episodes only (for a recording that holds fewer episodes)."""
        t = cls.__new__(cls)
        t.__dict__.update(truth.__dict__)
        t.lengths = truth.lengths[:n_episodes]
        t.starts = truth.starts[:n_episodes]
        return t

    def locate(self, index: int) -> tuple[int, int]:
        ep = int(np.searchsorted(np.cumsum(self.lengths), index, side="right"))
        return ep, index - self.starts[ep]

    def step(self, ep: int, key: str) -> np.ndarray:
        return self.arrays[f"ep{ep}/{key}"]


class RefVideo:
    """Every frame of each mp4, decoded in order with PyAV (a lerobot dependency), to pin down WHICH frame
    LeRobot returned: frame k of episode e must be the file's frame at (frames of earlier episodes in the
    same file + k) / fps. Comparing with the store's images alone cannot tell neighbouring frames apart
    at this size (codec error > the change between two frames)."""

    def __init__(self, root: Path, meta, truth: Truth) -> None:
        self.root, self.meta, self.truth = Path(root), meta, truth
        self.frames: dict[Path, tuple[np.ndarray, np.ndarray]] = {}
        self.where: dict[tuple[str, int], tuple[Path, int]] = {}
        seen: dict[tuple[str, Path], int] = {}
        for e, n in enumerate(truth.lengths):
            for cam in truth.cameras:
                key = f"observation.images.{cam}"
                path = self.root / meta.get_video_file_path(e, key)
                self.where[(cam, e)] = (path, seen.get((cam, path), 0))
                seen[(cam, path)] = seen.get((cam, path), 0) + n

    def _decode(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        if path not in self.frames:
            import av  # lerobot[dataset] dependency

            with av.open(str(path)) as c:
                s = c.streams.video[0]
                out = [(float(f.pts * s.time_base), f.to_ndarray(format="rgb24")) for f in c.decode(s)]
            self.frames[path] = (np.array([t for t, _ in out]), np.stack([a for _, a in out]))
        return self.frames[path]

    def check(self, got: torch.Tensor, cam: str, ep: int, k: int) -> str | None:
        path, offset = self.where[(cam, ep)]
        times, frames = self._decode(path)
        want_t = (offset + k) / self.truth.fps
        j = int(np.argmin(np.abs(times - want_t)))
        if abs(times[j] - want_t) > 1e-4:
            return f"no frame at t={want_t:.4f}s in {path.name} (closest {times[j]:.4f}s)"
        maes = {jj: image_mae(got, frames[jj]) for jj in (j - 1, j, j + 1) if 0 <= jj < len(frames)}
        if maes[j] >= 1.0 or any(m < maes[j] for m in maes.values()):
            near = {f"frame {jj - offset}": round(m, 2) for jj, m in maes.items()}
            return f"returned frame is not frame {k} of the episode's video span (MAE to decoded {near})"
        return None


def check_item(backend: str, item: dict, index: int, truth: Truth, tag: str, image_mae_max: float,
               dtype_notes: dict | None = None, ref: RefVideo | None = None) -> list[str]:
    """Compare one LeRobotDataset item with the ground truth; returns the problems (empty = pass)."""
    ep, k = truth.locate(index)
    problems: list[str] = []
    cams = [f"observation.images.{c}" for c in truth.cameras]
    want_keys = set(truth.feature_of.values()) | set(cams) | {
        "timestamp", "frame_index", "episode_index", "index", "task_index", "task"}
    missing = want_keys - set(item)
    if missing:
        problems.append(f"missing keys {sorted(missing)}")
    # low-dim values: exact equality with what our store holds
    for step_key, feat in truth.feature_of.items():
        if feat not in item:
            continue
        got = to_np(item[feat])
        want = truth.step(ep, step_key)[k]
        want_shape = tuple(np.shape(want)) if np.ndim(want) else ()
        if tuple(got.shape) != want_shape:
            problems.append(f"{feat}: shape {tuple(got.shape)} != {want_shape}")
        if got.dtype != np.asarray(want).dtype and dtype_notes is not None:
            err = float(np.abs(got.astype(np.float64) - np.asarray(want, np.float64)).max()) if got.size else 0.0
            prev = dtype_notes.get(feat, (None, 0.0))[1]
            dtype_notes[feat] = (f"{np.asarray(want).dtype} (info.json/parquet) -> {got.dtype} (ds[i])", max(prev, err))
        # Values must be exactly equal once cast to the dtype LeRobot hands out.
        if not np.array_equal(got.reshape(-1), np.asarray(want).reshape(-1).astype(got.dtype)):
            problems.append(f"{feat}: value {got.reshape(-1)[:4]} != {np.asarray(want).reshape(-1)[:4]}")
    scalars = {"frame_index": k, "episode_index": ep, "index": index}
    for key, want in scalars.items():
        if key in item and int(to_np(item[key])) != want:
            problems.append(f"{key}: {int(to_np(item[key]))} != {want}")
    if "timestamp" in item:
        ts = float(to_np(item["timestamp"]))
        if abs(ts - k / truth.fps) > 1e-5:
            problems.append(f"timestamp {ts} != {k / truth.fps}")
    if item.get("task") != truth.meta["instructions"][ep]:
        problems.append(f"task {item.get('task')!r} != {truth.meta['instructions'][ep]!r}")
    for cam in truth.cameras:
        key = f"observation.images.{cam}"
        if key not in item:
            continue
        frames = truth.step(ep, f"images/{cam}")
        h, w = frames.shape[1:3]
        got = item[key]
        if tuple(got.shape) != (3, h, w) or got.dtype != torch.float32:
            problems.append(f"{key}: {tuple(got.shape)} {got.dtype}, expected (3, {h}, {w}) torch.float32")
            continue
        mae = image_mae(got, frames[k])
        if mae > image_mae_max:
            problems.append(f"{key}: MAE {mae:.2f}/255 to the store's frame > {image_mae_max}")
        wrong = ref.check(got, cam, ep, k) if ref is not None else None
        if wrong:
            problems.append(f"{key}: {wrong}")
    return problems
