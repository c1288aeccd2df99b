"""LeRobot compatibility checks that write with LeRobot's own tools: its recording of the same
episodes as a layout reference, resuming (appending to) our export, and its dataset tools
(recompute stats, delete episodes, aggregate). Called from checker.main."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from compat_common import CHECKS, RefVideo, Truth, attempt, check_item, guarded, image_mae, record


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
