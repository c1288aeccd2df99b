"""Open one of our LeRobot v3.0 exports with the REAL lerobot package and check it against ground truth.

Runs in a separate Python >= 3.12 venv that has `lerobot[dataset]` installed (NOT the project venv):
it imports only lerobot, torch, numpy and the standard library. `check.py` (project
venv) writes the export and the ground truth, runs this file in a subprocess and renders the report.

Inputs (written by check.py):
    --root      the exported dataset (meta/, data/, videos/)
    --expected  expected.npz: ep{e}/state, ep{e}/action, ep{e}/<step key>, ep{e}/images/<cam> (uint8 NHWC)
    --meta      expected.json: fps, cameras, lengths, instructions, feature map
Output: --out result.json, a list of checks {backend, name, ok, detail} plus versions and tracebacks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from compat_common import (
    CHECKS,
    RefVideo,
    Truth,
    attempt,
    check_item,
    guarded,
    image_mae,
    record,
    version,
)
from compat_writers import lerobot_tools, native_reference, resume_append


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
