"""Open one of our LeRobot v3.0 exports with the REAL lerobot package and check it against ground truth.

Runs in a separate Python >= 3.12 venv that has `lerobot[dataset]` installed (NOT the project venv):
it imports only lerobot, torch, numpy and the standard library. `check_lerobot_compat.py` (project
venv) writes the export and the ground truth, runs this file in a subprocess and renders the report.

Inputs (written by check_lerobot_compat.py):
    --root      the exported dataset (meta/, data/, videos/)
    --expected  expected.npz: ep{e}/state, ep{e}/action, ep{e}/<step key>, ep{e}/images/<cam> (uint8 NHWC)
    --meta      expected.json: fps, cameras, lengths, instructions, feature map
Output: --out result.json, a list of checks {backend, name, ok, detail} plus versions and tracebacks.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

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


def run_backend(backend: str, args, truth: Truth, LeRobotDataset) -> dict:
    stats: dict = {"image_mae": []}
    vb = None if backend == "default" else backend
    if backend == "torchcodec":
        try:
            __import__("torchcodec.decoders")
        except Exception as e:  # torchcodec needs the system's FFmpeg 4..8 shared libraries
            CHECKS.append({"backend": backend, "name": "torchcodec backend", "ok": True, "note": True,
                           "detail": f"SKIPPED, torchcodec cannot load here ({type(e).__name__}: "
                                     f"{str(e).splitlines()[0][:200]}); it needs system FFmpeg libraries, e.g. "
                                     "Debian: apt-get install libavutil57 libavcodec59 libavformat59 libavdevice59 "
                                     "libavfilter8 libswscale6 libswresample4"})
            print(f"[SKIP] torchcodec: {e}", flush=True)
            return stats
    ds = guarded(backend, "LeRobotDataset(repo_id, root) opens", lambda: LeRobotDataset(
        repo_id="local/check", root=args.root, video_backend=vb))
    if ds is None:
        return stats
    record(backend, "LeRobotDataset(repo_id, root) opens", True,
           f"video backend in use: {getattr(ds, '_video_backend', '?')}")
    n_total = sum(truth.lengths)
    record(backend, "len(ds) == total frames", len(ds) == n_total, f"{len(ds)} vs {n_total}")
    record(backend, "meta.total_episodes", ds.meta.total_episodes == len(truth.lengths),
           f"{ds.meta.total_episodes} vs {len(truth.lengths)}")
    record(backend, "num_episodes / num_frames", ds.num_episodes == len(truth.lengths) and ds.num_frames == n_total,
           f"{ds.num_episodes} episodes, {ds.num_frames} frames")
    record(backend, "meta.fps", float(ds.meta.fps) == truth.fps, f"{ds.meta.fps}")
    want_cams = [f"observation.images.{c}" for c in truth.cameras]
    record(backend, "meta.video_keys / camera_keys", sorted(ds.meta.video_keys) == sorted(want_cams)
           and sorted(ds.meta.camera_keys) == sorted(want_cams), f"{ds.meta.video_keys}")
    tasks = list(ds.meta.tasks.index)
    want_tasks = list(dict.fromkeys(truth.meta["instructions"]))
    record(backend, "meta.tasks (index = task string, order = task_index)",
           tasks == want_tasks and list(ds.meta.tasks["task_index"]) == list(range(len(want_tasks))),
           f"{tasks}")
    st = ds.meta.stats
    stat_problems = []
    for feat in [*truth.feature_of.values(), *want_cams]:
        if st is None or feat not in st:
            stat_problems.append(f"no stats for {feat}")
            continue
        for s in ("min", "max", "mean", "std", "count"):
            if s not in st[feat]:
                stat_problems.append(f"{feat}: no {s}")
    for cam in want_cams:
        if st and cam in st and np.shape(st[cam]["mean"]) != (3, 1, 1):
            stat_problems.append(f"{cam}: mean shape {np.shape(st[cam]['mean'])} != (3, 1, 1)")
    if st and "observation.state" in st:
        allstate = np.concatenate([truth.step(e, "state") for e in range(len(truth.lengths))])
        if not np.allclose(st["observation.state"]["mean"], allstate.mean(0), atol=1e-5):
            stat_problems.append("observation.state mean differs from the data")
    record(backend, "meta.stats (min/max/mean/std/count per feature, images (3,1,1))", not stat_problems,
           "; ".join(stat_problems) or f"{len(st)} features")
    ep_meta = ds.meta.episodes
    ep_problems = []
    for e, n in enumerate(truth.lengths):
        row = ep_meta[e]
        if row["episode_index"] != e or row["length"] != n or row["dataset_from_index"] != truth.starts[e] \
                or row["dataset_to_index"] != truth.starts[e] + n or row["tasks"] != [truth.meta["instructions"][e]]:
            ep_problems.append(f"episode {e}: {({k: row[k] for k in ('episode_index', 'length', 'tasks')})}")
    record(backend, "meta.episodes rows (index, length, from/to, tasks)", not ep_problems,
           "; ".join(ep_problems) or f"{len(ep_meta)} rows, columns: {len(ep_meta.column_names)}")

    ref = guarded(backend, "reference decode of the mp4 files", lambda: RefVideo(Path(args.root), ds.meta, truth))
    # Single frames: first, last, and start/middle/end of every episode.
    indices = {0, n_total - 1}
    for s, n in zip(truth.starts, truth.lengths, strict=True):
        indices |= {s, s + n // 2, s + n - 1}
    bad: dict[int, list[str]] = {}
    first_item = None
    t0 = time.perf_counter()
    for i in sorted(indices):
        item, err = attempt(lambda i=i: ds[i])
        if item is None:
            bad[i] = [f"raised {err}"]
            continue
        first_item = first_item or item
        p = check_item(backend, item, i, truth, "single", args.image_mae_max, stats.setdefault("dtype_notes", {}),
                       ref)
        for cam in truth.cameras:
            ep, k = truth.locate(i)
            stats["image_mae"].append(image_mae(item[f"observation.images.{cam}"], truth.step(ep, f"images/{cam}")[k]))
        if p:
            bad[i] = p
    dt = time.perf_counter() - t0
    record(backend, f"ds[i] for {len(indices)} frames (first, last, start/middle/end of each episode)", not bad,
           "; ".join(f"[{i}] {', '.join(p)}" for i, p in bad.items())
           or f"keys, shapes, exact low-dim values, frame_index/episode_index/index/timestamp, task string match; "
              f"each image is exactly frame k of its episode's span in the mp4; MAE to the store's image "
              f"max {max(stats['image_mae']):.2f}/255 "
              f"mean {np.mean(stats['image_mae']):.2f}/255; {dt / max(1, len(indices)) * 1e3:.1f} ms/item")
    notes = stats.get("dtype_notes", {})
    CHECKS.append({"backend": backend, "name": "dtype conversions by LeRobot's __getitem__ (not a failure)",
                   "ok": True, "note": True, "detail": "; ".join(
                       f"{k}: {v}, max abs change of a value {e:.3g}" for k, (v, e) in notes.items()) or "none"})
    if first_item is not None:
        stats["item_layout"] = {k: (f"{tuple(v.shape)} {str(v.dtype).replace('torch.', '')}"
                                    if isinstance(v, torch.Tensor) else type(v).__name__)
                                for k, v in first_item.items()}

    # Every frame through a DataLoader: any frame whose timestamp misses its video frame raises here.
    def full_pass():
        # Shuffled, as in training: random access is what exposes seek problems (sequential decoding hides them).
        loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True, num_workers=args.workers,
                                             generator=torch.Generator().manual_seed(0))
        seen, t = 0, time.perf_counter()
        worst = 0.0
        for batch in loader:
            idx = batch["index"].numpy()
            for j, i in enumerate(idx):
                ep, k = truth.locate(int(i))
                if not np.array_equal(batch["action"][j].numpy(), truth.step(ep, "action")[k]):
                    raise AssertionError(f"index {i}: action differs")
                for cam in truth.cameras:
                    got = batch[f"observation.images.{cam}"][j]
                    worst = max(worst, image_mae(got, truth.step(ep, f"images/{cam}")[k]))
                    wrong = ref.check(got, cam, ep, k) if ref is not None else None
                    if wrong:
                        raise AssertionError(f"index {i} {cam}: {wrong}")
            seen += len(idx)
        return seen, worst, time.perf_counter() - t
    res = guarded(backend, "shuffled DataLoader over every frame", full_pass)
    if res is not None:
        seen, worst, t = res
        record(backend, f"shuffled DataLoader over every frame (num_workers={args.workers})",
               seen == n_total and worst <= args.image_mae_max,
               f"{seen}/{n_total} frames, actions exact, every image the right mp4 frame, worst image MAE to the "
               f"store {worst:.2f}/255, {t:.1f} s")

    # delta_timestamps: action chunk of H at fps, 2-frame image/state history.
    H = args.chunk
    fps = truth.fps
    cam0 = f"observation.images.{truth.cameras[0]}"
    delta = {"action": [i / fps for i in range(H)],
             "observation.state": [-1 / fps, 0.0],
             cam0: [-1 / fps, 0.0]}
    dsd = guarded(backend, "LeRobotDataset(delta_timestamps=...) opens", lambda: LeRobotDataset(
        repo_id="local/check", root=args.root, video_backend=vb, delta_timestamps=delta))
    if dsd is not None:
        probs = []
        probe = sorted({0, truth.starts[1] + truth.lengths[1] // 2, truth.starts[-1] + truth.lengths[-1] - 3,
                        n_total - 1})
        for i in probe:
            item, err = attempt(lambda i=i: dsd[i])
            if item is None:
                probs.append(f"[{i}] raised {err}")
                continue
            ep, k = truth.locate(i)
            n = truth.lengths[ep]
            act = truth.step(ep, "action")
            want = act[np.clip(np.arange(k, k + H), 0, n - 1)]
            if tuple(item["action"].shape) != (H, act.shape[1]):
                probs.append(f"[{i}] action shape {tuple(item['action'].shape)}")
            elif not np.array_equal(item["action"].numpy(), want):
                probs.append(f"[{i}] action chunk values differ")
            pad = np.arange(k, k + H) >= n
            if not np.array_equal(item["action_is_pad"].numpy(), pad):
                probs.append(f"[{i}] action_is_pad {item['action_is_pad'].numpy().astype(int)} != {pad.astype(int)}")
            state = truth.step(ep, "state")
            want_s = state[np.clip([k - 1, k], 0, n - 1)]
            if not np.array_equal(item["observation.state"].numpy(), want_s):
                probs.append(f"[{i}] state history differs")
            if not np.array_equal(item["observation.state_is_pad"].numpy(), np.array([k - 1 < 0, False])):
                probs.append(f"[{i}] state_is_pad {item['observation.state_is_pad'].numpy()}")
            img = item[cam0]
            frames = truth.step(ep, f"images/{truth.cameras[0]}")
            if tuple(img.shape) != (2, 3, *frames.shape[1:3]):
                probs.append(f"[{i}] {cam0} shape {tuple(img.shape)}")
            else:
                for j, kk in enumerate(np.clip([k - 1, k], 0, n - 1)):
                    m = image_mae(img[j], frames[kk])
                    if m > args.image_mae_max:
                        probs.append(f"[{i}] {cam0}[{j}] MAE {m:.2f}")
                    wrong = ref.check(img[j], truth.cameras[0], ep, int(kk)) if ref is not None else None
                    if wrong:
                        probs.append(f"[{i}] {cam0}[{j}]: {wrong}")
        record(backend, f"delta_timestamps: action chunk {H} @ {fps:g} fps, state+{cam0} history [-1/fps, 0]",
               not probs, "; ".join(probs) or f"items {probe}: action[{H},A] == store actions[k:k+{H}] (end-padded "
               "with the last action), action_is_pad, state/image history and *_is_pad all correct")

    # Episode subset: index mapping through meta.episodes and the `index` column.
    sub = [len(truth.lengths) - 1, 1]
    dss = guarded(backend, f"LeRobotDataset(episodes={sub})", lambda: LeRobotDataset(
        repo_id="local/check", root=args.root, video_backend=vb, episodes=sub))
    if dss is not None:
        want_n = sum(truth.lengths[e] for e in sub)
        probs = []
        if len(dss) != want_n:
            probs.append(f"len {len(dss)} != {want_n}")
        for j in (0, len(dss) - 1):
            item, err = attempt(lambda j=j: dss[j])
            if item is None:
                probs.append(f"[{j}] raised {err}")
                continue
            p = check_item(backend, item, int(item["index"]), truth, "subset", args.image_mae_max, None, ref)
            if int(item["episode_index"]) not in sub:
                p.append(f"episode {int(item['episode_index'])} not in {sub}")
            probs += [f"[{j}] {x}" for x in p]
        record(backend, f"episodes={sub} subset", not probs, "; ".join(probs) or f"{len(dss)} frames, values match")
    return stats


def add_episode(ds: Any, truth: Truth, e: int, task: str) -> None:
    """Record ground-truth episode `e` through LeRobot's own writer (add_frame + save_episode)."""
    for k in range(truth.lengths[e]):
        frame = {"task": task}
        for step_key, feat in truth.feature_of.items():
            v = np.asarray(truth.step(e, step_key)[k])
            frame[feat] = v.reshape(1) if v.ndim == 0 else v
        for cam in truth.cameras:
            frame[f"observation.images.{cam}"] = truth.step(e, f"images/{cam}")[k]
        ds.add_frame(frame)
    ds.save_episode()


def native_reference(args, truth: Truth, LeRobotDataset, work: Path) -> None:
    """Record the same episodes with LeRobot's own writer and diff the on-disk layout against our export."""
    import pyarrow.parquet as pq  # a lerobot dependency

    ours_info = json.loads((Path(args.root) / "meta/info.json").read_text())
    features = {k: {kk: vv for kk, vv in v.items() if kk != "info"} for k, v in ours_info["features"].items()
                if k not in ("timestamp", "frame_index", "episode_index", "index", "task_index")}
    root = work / "native"
    shutil.rmtree(root, ignore_errors=True)
    from lerobot.configs.video import RGBEncoderConfig

    codec = next(ft["info"]["video.codec"] for ft in ours_info["features"].values() if ft["dtype"] == "video")
    vcodec = {"av1": "libsvtav1"}.get(codec, codec)  # the codec of our export, LeRobot's encoder name

    def build():
        # Same codec and the same file-size / chunk settings as our export, so the layouts are comparable.
        ds = LeRobotDataset.create(repo_id="local/native", fps=int(truth.fps), features=features, root=root,
                                   use_videos=True,
                                   rgb_encoder=RGBEncoderConfig(vcodec=vcodec,
                                                                extra_options=json.loads(args.native_extra_options)),
                                   video_files_size_in_mb=ours_info["video_files_size_in_mb"],
                                   data_files_size_in_mb=ours_info["data_files_size_in_mb"])
        ds.meta.update_chunk_settings(chunks_size=ours_info["chunks_size"])
        for e in range(min(2, len(truth.lengths))):
            add_episode(ds, truth, e, truth.meta["instructions"][e])
        ds.finalize()
        return ds
    name = (f"LeRobot's own writer records the first 2 episodes (vcodec={vcodec}, its default g/crf, extra options "
            f"{args.native_extra_options})")
    if guarded("native", name, build) is None:
        return
    record("native", name, True, str(root))
    diffs = []
    nat_info = json.loads((root / "meta/info.json").read_text())
    for k in sorted(set(nat_info) | set(ours_info)):
        if k in ("total_episodes", "total_frames", "total_tasks", "splits", "features"):
            continue
        if nat_info.get(k, "<absent>") != ours_info.get(k, "<absent>"):
            a, b = nat_info.get(k, "<absent>"), ours_info.get(k, "<absent>")
            diffs.append(f"info.json `{k}`: lerobot {a!r}, ours {b!r}")
    for k in sorted(set(nat_info["features"]) | set(ours_info["features"])):
        a, b = nat_info["features"].get(k), ours_info["features"].get(k)
        if a is None or b is None:
            diffs.append(f"info.json features[{k!r}]: lerobot {a}, ours {b}")
            continue
        for field in sorted(set(a) | set(b)):
            fa, fb = a.get(field, "<absent>"), b.get(field, "<absent>")
            if fa == fb:
                continue
            if isinstance(fa, dict) and isinstance(fb, dict):
                only_a = {x: fa[x] for x in fa if x not in fb}
                only_b = {x: fb[x] for x in fb if x not in fa}
                changed = {x: (fa[x], fb[x]) for x in fa if x in fb and fa[x] != fb[x]}
                diffs.append(f"info.json features[{k!r}][{field!r}]: only lerobot has {only_a}; only ours has "
                             f"{only_b}" + (f"; differ (lerobot, ours): {changed}" if changed else ""))
            else:
                diffs.append(f"info.json features[{k!r}][{field!r}]: lerobot {fa!r}, ours {fb!r}")

    def schema_of(path: Path) -> dict[str, str]:
        return {f.name: str(f.type) for f in pq.read_schema(path)}
    for rel in ("data/chunk-000/file-000.parquet", "meta/episodes/chunk-000/file-000.parquet", "meta/tasks.parquet"):
        a, b = schema_of(root / rel), schema_of(Path(args.root) / rel)
        for col in sorted(set(a) | set(b)):
            if a.get(col) != b.get(col):
                diffs.append(f"{rel} column `{col}`: lerobot {a.get(col, '<absent>')}, ours {b.get(col, '<absent>')}")
    nat_stats = json.loads((root / "meta/stats.json").read_text())
    ours_stats = json.loads((Path(args.root) / "meta/stats.json").read_text())
    for feat in sorted(set(nat_stats) | set(ours_stats)):
        a, b = set(nat_stats.get(feat, {})), set(ours_stats.get(feat, {}))
        if a != b:
            diffs.append(f"stats.json[{feat!r}] keys: lerobot-only {sorted(a - b)}, ours-only {sorted(b - a)}")
    CHECKS.append({"backend": "native", "name": "layout diff vs LeRobot's own writer", "ok": True,
                   "detail": "\n".join(diffs) or "no differences", "diffs": diffs})
    print("layout diffs:\n  " + "\n  ".join(diffs), flush=True)
    # Our reader's expectations aside, lerobot must read its own recording back the same way as ours.
    sub = Truth.subset(truth, 2)
    vkey = next(k for k, f in nat_info["features"].items() if f["dtype"] == "video")
    if not attempt(lambda: __import__("torchcodec.decoders"))[1]:
        def stream():
            from lerobot.datasets.streaming_dataset import StreamingLeRobotDataset

            n = sum(sub.lengths)
            seen = set()
            for count, item in enumerate(StreamingLeRobotDataset(repo_id="local/native", root=root, buffer_size=64)):
                seen.add(int(item["index"]))
                if len(seen) >= n or count >= 3 * n:
                    break
            assert len(seen) == n, f"{len(seen)}/{n} frames"
            return n
        n, err = attempt(stream)
        record("native", "StreamingLeRobotDataset on LeRobot's own recording", err is None,
               err or f"{n} frames; video files per camera: "
               f"{len(list((root / 'videos' / vkey).rglob('*.mp4')))}")
    for backend in [b for b in args.backends.split(",") if b]:
        if backend == "torchcodec" and attempt(lambda: __import__("torchcodec.decoders"))[1]:
            continue
        vb = None if backend == "default" else backend
        nat = guarded("native", f"reopen LeRobot's own recording ({backend})", lambda vb=vb: LeRobotDataset(
            repo_id="local/native", root=root, video_backend=vb))
        if nat is None:
            continue
        notes: dict = {}
        nref = RefVideo(root, nat.meta, sub)
        order = np.random.default_rng(0).permutation(len(nat))
        probs = []
        for i in order.tolist():
            item, err = attempt(lambda i=i, nat=nat: nat[i])
            p = [f"raised {err}"] if item is None else check_item(
                "native", item, i, sub, "native", args.image_mae_max, notes, nref)
            probs += [f"[{i}] {x}" for x in p]
        record("native", f"LeRobot's own recording read back, every frame in random order ({backend})", not probs,
               (f"{len(probs)} problems: " + "; ".join(probs[:6]) if probs else
                f"{len(nat)} frames match (same checks as for our export)")
               + "; its dtype conversions: " + ("; ".join(f"{k}: {v}" for k, (v, _) in notes.items()) or "none"))


def resume_append(args, truth: Truth, LeRobotDataset, work: Path) -> None:
    """LeRobotDataset.resume() on a copy of our export and record one more episode into it."""
    root = work / "resumed"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(args.root, root)

    def go():
        ds = LeRobotDataset.resume(repo_id="local/check", root=root)
        add_episode(ds, truth, 0, "a brand new task")
        ds.finalize()
        re = LeRobotDataset(repo_id="local/check", root=root, video_backend="pyav")
        n_old = sum(truth.lengths)
        assert re.meta.total_episodes == len(truth.lengths) + 1, re.meta.total_episodes
        assert len(re) == n_old + truth.lengths[0], len(re)
        last = re[len(re) - 1]
        assert last["task"] == "a brand new task", last["task"]
        assert np.array_equal(last["action"].numpy(), truth.step(0, "action")[-1])
        old = re[n_old - 1]
        p = check_item("resume", old, n_old - 1, truth, "resume", args.image_mae_max, None,
                       RefVideo(root, re.meta, truth))
        assert not p, p
        return re
    re = guarded("resume", "LeRobotDataset.resume() appends an episode to our export", go)
    if re is not None:
        record("resume", "LeRobotDataset.resume() appends an episode to our export", True,
               f"{re.meta.total_episodes} episodes, {len(re)} frames after append; old and new frames read back")


def lerobot_tools(args, truth: Truth, LeRobotDataset, work: Path) -> None:
    """LeRobot's dataset tools on our export: recompute_stats, delete_episodes, aggregate_datasets."""
    from lerobot.datasets.aggregate import aggregate_datasets
    from lerobot.datasets.dataset_tools import delete_episodes, recompute_stats

    n_eps, n_total = len(truth.lengths), sum(truth.lengths)
    ours = json.loads((Path(args.root) / "meta/stats.json").read_text())

    def restats():
        root = work / "restats"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(args.root, root)
        ds = recompute_stats(LeRobotDataset(repo_id="local/check", root=root, video_backend="pyav"))
        diffs, qdiffs = [], []
        for feat, st in ds.meta.stats.items():
            if feat.startswith("observation.images.") or feat not in ours:
                continue
            for name, val in st.items():
                a, b = np.asarray(val, np.float64), np.asarray(ours[feat].get(name), np.float64)
                if a.shape != b.shape:
                    diffs.append(f"{feat}/{name}: shape lerobot {a.shape}, ours {b.shape}")
                    continue
                err = float(np.abs(a - b).max()) if a.size else 0.0
                scale = float(np.abs(a).max()) if a.size else 0.0
                if err > 1e-5 * max(1.0, scale):
                    (qdiffs if name.startswith("q") else diffs).append(f"{feat}/{name} max|diff| {err:.3g}")
        return diffs, qdiffs
    res = guarded("tools", "recompute_stats() vs our stats.json", restats)
    if res is not None:
        diffs, qdiffs = res
        record("tools", "recompute_stats() vs our stats.json", not diffs,
               ("; ".join(diffs) or "min/max/mean/std/count of every low-dim feature equal (1e-5)")
               + ("; quantiles differ (LeRobot averages per-episode quantiles, ours are exact over all frames): "
                  + ", ".join(qdiffs) if qdiffs else "; quantiles equal"))

    def delete():
        out = work / "deleted"
        shutil.rmtree(out, ignore_errors=True)
        src = LeRobotDataset(repo_id="local/check", root=args.root, video_backend="pyav")
        new = delete_episodes(src, [1], output_dir=out, repo_id="local/deleted")
        new = LeRobotDataset(repo_id="local/deleted", root=out, video_backend="pyav")
        assert new.meta.total_episodes == n_eps - 1, new.meta.total_episodes
        assert len(new) == n_total - truth.lengths[1], len(new)
        # old episode 2 is new episode 1: its frames must still be episode 2's values and images
        start = truth.lengths[0]
        probs = []
        for j in (start, start + truth.lengths[2] // 2):
            item = new[j]
            k = j - start
            if not np.array_equal(item["action"].numpy(), truth.step(2, "action")[k]):
                probs.append(f"[{j}] action != old episode 2 step {k}")
            if item["task"] != truth.meta["instructions"][2]:
                probs.append(f"[{j}] task {item['task']!r}")
            for cam in truth.cameras:
                m = image_mae(item[f"observation.images.{cam}"], truth.step(2, f"images/{cam}")[k])
                if m > args.image_mae_max:
                    probs.append(f"[{j}] {cam} MAE {m:.2f}")
        assert not probs, probs
        return new
    new = guarded("tools", "delete_episodes([1]) on our export, reopen", delete)
    if new is not None:
        record("tools", "delete_episodes([1]) on our export, reopen", True,
               f"{new.meta.total_episodes} episodes, {len(new)} frames; old episode 2 (now 1) reads back "
               f"(actions exact, images within MAE, task)")

    def aggregate():
        copy, out = work / "agg_src2", work / "aggregated"
        for d in (copy, out):
            shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(args.root, copy)
        aggregate_datasets(repo_ids=["local/a", "local/b"], aggr_repo_id="local/agg",
                           roots=[Path(args.root), copy], aggr_root=out)
        agg = LeRobotDataset(repo_id="local/agg", root=out, video_backend="pyav")
        assert agg.meta.total_episodes == 2 * n_eps, agg.meta.total_episodes
        assert len(agg) == 2 * n_total, len(agg)
        last = agg[len(agg) - 1]
        assert np.array_equal(last["action"].numpy(), truth.step(n_eps - 1, "action")[-1])
        assert last["task"] == truth.meta["instructions"][-1], last["task"]
        assert int(last["episode_index"]) == 2 * n_eps - 1
        m = image_mae(last[f"observation.images.{truth.cameras[0]}"],
                      truth.step(n_eps - 1, f"images/{truth.cameras[0]}")[-1])
        assert m <= args.image_mae_max, m
        return agg
    def streaming():
        from lerobot.datasets.streaming_dataset import StreamingLeRobotDataset

        sds = StreamingLeRobotDataset(repo_id="local/check", root=args.root, buffer_size=64)
        meta = LeRobotDataset(repo_id="local/check", root=args.root, video_backend="pyav").meta
        ref = RefVideo(Path(args.root), meta, truth)
        seen, probs = set(), []
        for count, item in enumerate(sds):
            i = int(item["index"])
            seen.add(i)
            p = check_item("tools", item, i, truth, "stream", args.image_mae_max, None, ref)
            probs += [f"[{i}] {x}" for x in p]
            if len(seen) >= n_total or count >= 3 * n_total:  # it may cycle forever (shuffle across exhaustions)
                break
        return len(seen), probs
    if attempt(lambda: __import__("torchcodec.decoders"))[1]:
        CHECKS.append({"backend": "tools", "name": "StreamingLeRobotDataset(root=export)", "ok": True, "note": True,
                       "detail": "SKIPPED: it decodes with torchcodec only, which cannot load here"})
    else:
        res = guarded("tools", "StreamingLeRobotDataset(root=export), iterate every frame", streaming)
        if res is not None:
            n_seen, probs = res
            record("tools", "StreamingLeRobotDataset(root=export), iterate every frame (torchcodec)",
                   n_seen == n_total and not probs,
                   f"{n_seen}/{n_total} distinct frames; " + ("; ".join(probs[:6]) if probs else
                                                              "every item passes the ds[i] checks"))
    agg = guarded("tools", "aggregate_datasets([export, copy of export]), reopen", aggregate)
    if agg is not None:
        record("tools", "aggregate_datasets([export, copy of export]), reopen", True,
               f"{agg.meta.total_episodes} episodes, {len(agg)} frames, {len(agg.meta.tasks)} tasks; "
               "last frame of the second copy reads back")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--backends", default="torchcodec,pyav")
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--native-extra-options", default="{}",
                    help="JSON encoder options for LeRobot's own reference recording (as our export used)")
    ap.add_argument("--image-mae-max", type=float, default=8.0, help="max mean abs error, 0..255 units")
    ap.add_argument("--extra", default="native,resume,tools",
                    help="comma list: native (layout diff), resume, tools (recompute_stats, delete, aggregate)")
    args = ap.parse_args()
    work = Path(args.out).parent
    truth = Truth(Path(args.expected), Path(args.meta))
    result: dict = {"python": sys.version.split()[0], "versions": {p: version(p) for p in (
        "lerobot", "torch", "torchvision", "torchcodec", "av", "datasets", "pyarrow", "pandas", "numpy",
        "huggingface-hub")}, "env": {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
                                                                     "HF_LEROBOT_HOME")}}
    LeRobotDataset = None
    for mod in ("lerobot.datasets.lerobot_dataset", "lerobot.common.datasets.lerobot_dataset"):
        try:
            LeRobotDataset = __import__(mod, fromlist=["LeRobotDataset"]).LeRobotDataset
            result["import_path"] = f"from {mod} import LeRobotDataset"
            break
        except ImportError as e:
            result.setdefault("import_errors", []).append(f"{mod}: {e}")
    if LeRobotDataset is None:
        record("-", "import LeRobotDataset", False, "; ".join(result["import_errors"]))
    else:
        try:
            from lerobot.utils.import_utils import get_safe_default_video_backend
            result["default_video_backend"] = get_safe_default_video_backend()
        except Exception as e:
            result["default_video_backend"] = f"? ({e})"
        per_backend = {}
        for backend in [b for b in args.backends.split(",") if b]:
            per_backend[backend] = run_backend(backend, args, truth, LeRobotDataset)
        result["per_backend"] = per_backend
        extras = set(args.extra.split(","))
        if "native" in extras:
            native_reference(args, truth, LeRobotDataset, work)
        if "resume" in extras:
            resume_append(args, truth, LeRobotDataset, work)
        if "tools" in extras:
            lerobot_tools(args, truth, LeRobotDataset, work)
    result["checks"] = CHECKS
    Path(args.out).write_text(json.dumps(result, indent=2, default=str))
    ours = [c for c in CHECKS if not c.get("reference")]
    failed = [c for c in ours if not c["ok"]]
    ref_failed = [c for c in CHECKS if c.get("reference") and not c["ok"]]
    print(f"export: {len(ours) - len(failed)} passed, {len(failed)} failed; "
          f"LeRobot's own reference recording: {len(ref_failed)} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
