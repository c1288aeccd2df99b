"""Prove with the REAL lerobot package that `vla.data.lerobot.export_lerobot` writes a LeRobot v3.0 dataset.

Our exporter does not depend on lerobot (lerobot >= 0.5 needs Python 3.12; the project venv is 3.11),
so this script runs in the project venv and, for each variant in VARIANTS (codec, fps, file limits,
episode order), writes a small synthetic store, exports it, dumps the ground truth (every step key,
images, instructions) to .npz, then runs `checker.py` with a separate lerobot venv's
python, offline, which opens the export with `lerobot.datasets.lerobot_dataset.LeRobotDataset` and
LeRobot's tools and compares every value (see the report's "What is checked").

One-time lerobot venv (Python 3.12; pulls torch from PyPI, CUDA build, several GB):
    /root/.pyenv/versions/3.12.1/bin/python3.12 -m venv /tmp/lerobot-venv
    /tmp/lerobot-venv/bin/pip install "lerobot[dataset]==0.6.1"
For the torchcodec backend (LeRobot's default) torchcodec needs system FFmpeg libraries, e.g. Debian 12:
    apt-get install -y --no-install-recommends libavutil57 libavcodec59 libavformat59 libavdevice59 \
        libavfilter8 libswscale6 libswresample4
(without them the torchcodec rows are reported as skipped).

Usage (project venv, repository root; about 2 minutes on 2 cores):
    .venv/bin/python -m tests.vla.data.lerobot_compat.check --lerobot-python /tmp/lerobot-venv/bin/python
Writes benchmarks/results/lerobot_compat.md; exits 1 if any check of our export failed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from vla.data.lerobot import export_lerobot
from vla.data.lerobot_layout import STEP_TO_FEATURE
from vla.data.lerobot_video import VideoEpisodeWriter
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode

HERE = Path(__file__).resolve().parent
CHECKER = HERE / "checker.py"
ROOT = HERE.parents[3]
RESULTS = ROOT / "benchmarks" / "results" / "lerobot_compat.md"


def dump_truth(store: EpisodeStore, out: Path, order: list[int]) -> tuple[Path, Path]:
    """expected.npz (every step array of the exported episodes, as the store holds them, numbered in export
    order) and expected.json."""
    arrays: dict[str, np.ndarray] = {}
    lengths, instructions = [], []
    for e, store_index in enumerate(order):
        ep = store.episode(store_index)
        for key, value in ep.steps.items():
            arrays[f"ep{e}/{key}"] = np.asarray(value)
        lengths.append(len(ep))
        instructions.append(ep.instruction)
    npz, meta = out / "expected.npz", out / "expected.json"
    np.savez(npz, **arrays)
    meta.write_text(json.dumps({
        "fps": store.schema.fps,
        "cameras": list(store.schema.cameras),
        "lengths": lengths,
        "instructions": instructions,
        "step_to_feature": STEP_TO_FEATURE,
    }, indent=2))
    return npz, meta


def lerobot_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(work / "hf_home"),
               HF_LEROBOT_HOME=str(work / "hf_lerobot_home"), TOKENIZERS_PARALLELISM="false",
               SVT_LOG="1", PYTHONWARNINGS="ignore::DeprecationWarning")
    env.pop("PYTHONPATH", None)
    return env


def _provenance() -> str:
    """The commit and the exporter files' hashes as checked (the working tree may carry uncommitted edits)."""
    import hashlib

    repo = ROOT
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "?"
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "vla/data"], cwd=repo, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head, dirty = "?", ""
    files = ["lerobot.py", "lerobot_export.py", "lerobot_layout.py", "lerobot_video.py"]
    sums = ", ".join(f"{f} {hashlib.sha256((repo / 'vla/data' / f).read_bytes()).hexdigest()[:10]}" for f in files)
    return f"git {head}{' + uncommitted changes in vla/data' if dirty else ''}; sha256 {sums}"


def _advice(runs: list[dict]) -> list[str]:
    """Recommended exporter changes, derived from what the checker saw (each names file, key and value)."""
    diffs = " ".join(d for r in runs for c in r.get("result", {}).get("checks", []) for d in c.get("diffs", []))
    notes = " ".join(c["detail"] for r in runs for c in r.get("result", {}).get("checks", []) if c.get("note"))
    out = []
    if "'video.is_depth_map'" in diffs:
        out.append(
            "`vla/data/lerobot_video.py` `video_info()`: write `\"is_depth_map\": False` instead of "
            "`\"video.is_depth_map\": False` in `info.json` `features[<camera>][\"info\"]`. lerobot 0.6 writes "
            "the unprefixed key (`video_utils.get_video_info`); it still reads the prefixed one as legacy "
            "(`LeRobotDatasetMetadata.depth_keys`) and renames it with a warning whenever it rewrites the "
            "video info (`update_video_info`). Not breaking.")
    if "'video.g'" in diffs:
        out.append(
            "`vla/data/lerobot_video.py` `video_info()` (or the exporter after encoding): also record the encoder "
            "settings as LeRobot's writer does: `\"video.g\": <gop>`, `\"video.crf\": <crf>`, "
            "`\"video.preset\": <preset or null>`, `\"video.fast_decode\": 0`, `\"video.video_backend\": "
            "\"pyav\"`, `\"video.extra_options\": {}`. LeRobot's editing tools (`delete_episodes`, "
            "`split_dataset`, `reencode_dataset`) rebuild the encoder from these keys "
            "(`encoder_config_from_video_info`); without them they fall back to g=2, crf=30 (and preset 12 for "
            "libsvtav1), which equals our defaults but not a custom `crf`/`gop`. Not breaking.")
    if "source_timestamp: float64" in notes:
        out.append(
            "`source_timestamp` (our float64 step `timestamp`): parquet keeps the float64 exactly, but "
            "`LeRobotDataset.__getitem__` hands every scalar float feature out as a float32 tensor "
            "(`hf_transform_to_torch` calls `torch.tensor(python_float)`), its own recordings included. With "
            "wall-clock stamps (~1.76e9 s, e.g. ROS time) that rounds to 128 s steps (max change seen is in the "
            "dtype row above). If LeRobot users need the source clock, export it relative to the episode start "
            "(`vla/data/lerobot_export.py`: `source_timestamp = ts - ts[0]`, with the float64 `ts[0]` as an extra "
            "`meta/episodes` column, e.g. `source_time_origin`), or accept that only our importer and pyarrow see "
            "it exactly.")
    hevc = [r for r in runs if r["spec"]["vcodec"] == "hevc" and not r["spec"].get("writer_options")]
    hevc_fail = [c for r in hevc for c in r.get("result", {}).get("checks", [])
                 if not c["ok"] and c["backend"] == "torchcodec" and "FrameTimestampError" in c["detail"]]
    hevc_native = [c for r in hevc for c in r.get("result", {}).get("checks", [])
                   if c.get("reference") and "(torchcodec)" in c["name"] and not c["ok"]]
    if hevc_fail:
        fixed = [r for r in runs if r["spec"].get("writer_options", {}).get("bf") == "0"]
        fixed_ok = fixed and all(r["rc"] == 0 for r in fixed)
        out.append(
            "**hevc exports fail with LeRobot's default video backend (torchcodec)**: `ds[i]` raises "
            "`FrameTimestampError` (the frame 1/fps after the requested one comes back) on random access. x265 "
            "puts B-frames in the stream (pts != dts order), and LeRobot's `decode_video_frames_torchcodec` uses "
            "`VideoDecoder(seek_mode=\"approximate\")` + `get_frames_at(round(ts * fps))`, which lands one frame "
            "late after a forward seek in such a stream; pyav and torchcodec's exact mode are right. "
            + ("LeRobot's own hevc recording of the same episodes (its encoder, g=2 crf=30) fails the same way "
               "(reference row of the `hevc` table), so it is a LeRobot/torchcodec problem, but our exporter "
               "can avoid it. " if hevc_native else "")
            + "Fix: `vla/data/lerobot_video.py`, `VideoEpisodeWriter.__init__`:"
            " `self.options = {\"g\": str(gop), \"crf\": str(crf)}` -> add `\"bf\": \"0\"` when `codec` is "
            "`hevc` (harmless for `h264`, whose stream already has no reordering; leave libsvtav1 as is). "
            + ("The `hevc-bf0` variant (that change, simulated) passes every check." if fixed_ok else
               "The `hevc-bf0` variant (that change, simulated) did NOT pass: see its table.")
            + " Alternatively drop `hevc` from `VALID_VIDEO_CODECS` in `vla/data/lerobot_export.py`.")
    stream_fail = [(r, c) for r in runs for c in r.get("result", {}).get("checks", [])
                   if not c["ok"] and c["name"].startswith("StreamingLeRobotDataset(root=export)")]
    if stream_fail:
        native_too = any(not c["ok"] for r, _ in stream_fail for c in r["result"]["checks"]
                         if c["name"] == "StreamingLeRobotDataset on LeRobot's own recording")
        out.append(
            f"`StreamingLeRobotDataset` fails on `{'`, `'.join(sorted({r['name'] for r, _ in stream_fail}))}` "
            f"({stream_fail[0][1]['detail'].splitlines()[0][:160]}). It looks frames up at `index / fps` in the "
            "episode's video file (`streaming_dataset.py`: `current_ts = item[\"index\"] / self.fps`, "
            "ignoring `from_timestamp`), which is only right while every episode of a camera sits in one "
            "mp4 starting at dataset index 0. "
            + ("LeRobot's own recording with the same file limits fails the same way (reference row). "
               if native_too else "")
            + "A LeRobot limitation: nothing to fix in the exporter except keeping one video file per camera "
            "(the default `video_files_size_in_mb=200` does that up to 200 MB); `LeRobotDataset` (map-style) "
            "reads such exports correctly.")
    if "policy_version: int32" in notes:
        out.append(
            "`policy_version` (int32 in info.json) comes out of `ds[i]` as int64, likewise for LeRobot's own "
            "recordings (same `torch.tensor(python_int)`); values are exact. Nothing to change.")
    return out


def render(args: argparse.Namespace, runs: list[dict], work: Path, argv: str) -> str:
    first = next((r["result"] for r in runs if r.get("result")), {})
    v = first.get("versions", {})
    lines = [
        "# LeRobot v3.0 compatibility of `export_lerobot` (checked with the real lerobot package)",
        "",
        f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by "
        "`python -m tests.vla.data.lerobot_compat.check` "
        "(checker: `tests/vla/data/lerobot_compat/checker.py`).",
        "",
        f"- lerobot **{v.get('lerobot', '?')}** (Python {first.get('python', '?')}), torch {v.get('torch', '?')}, "
        f"torchvision {v.get('torchvision', '?')}, torchcodec {v.get('torchcodec', '?')}, av {v.get('av', '?')}, "
        f"datasets {v.get('datasets', '?')}, pyarrow {v.get('pyarrow', '?')}, pandas {v.get('pandas', '?')}, "
        f"numpy {v.get('numpy', '?')}, huggingface-hub {v.get('huggingface-hub', '?')}",
        f"- import: `{first.get('import_path', '?')}`; lerobot's default video backend here: "
        f"`{first.get('default_video_backend', '?')}`",
        f"- exporter side: `vla.data.lerobot.export_lerobot`, Python {platform.python_version()} (project venv), "
        f"numpy {np.__version__}; {_provenance()}",
        f"- data: {args.episodes} synthetic episodes per store (`vla.data.synthetic`), {args.image_size}x"
        f"{args.image_size} images, 2 cameras, state 9, action 7; the last episode's float64 step timestamps "
        f"are shifted by {args.wallclock_offset:g} s (wall-clock stamps). Loaded offline (HF_HUB_OFFLINE=1, "
        "HF_DATASETS_OFFLINE=1, HF_HOME in the work directory).",
        "",
        "## Verdict",
        "",
    ]
    for r in runs:
        checks = [c for c in r.get("result", {}).get("checks", []) if not c.get("reference")]
        refs = [c for c in r.get("result", {}).get("checks", []) if c.get("reference")]
        failed = [c for c in checks if not c["ok"]]
        status = "NO RESULT" if not checks else ("PASS" if not failed else f"FAIL ({len(failed)} checks)")
        lines.append(f"- `{r['name']}` ({r['spec']['about']}): **{status}**, {len(checks) - len(failed)}/"
                     f"{len(checks)} checks of our export passed (checker exit code {r['rc']})")
        lines += [f"  - FAILED ({c['backend']}) {c['name']}: {c['detail'].splitlines()[0][:240]}" for c in failed]
        ref_failed = [c for c in refs if not c["ok"]]
        if ref_failed:
            lines += [f"  - the same on LeRobot's own recording of these episodes: ({c['backend']}) {c['name']}: "
                      f"{c['detail'].splitlines()[0][:240]}" for c in ref_failed]
    advice = _advice(runs)
    lines += ["", "## Findings and recommended exporter changes", ""]
    lines += [f"{i}. {a}" for i, a in enumerate(advice, 1)] or ["None."]
    notes = {}
    for r in runs:
        for c in r.get("result", {}).get("checks", []):
            if c.get("note") and c["detail"] != "none":
                notes.setdefault((c["name"], c["detail"]), []).append(f"{r['name']}/{c['backend']}")
    if notes:
        lines += ["", "Notes from the checker (not failures):", ""]
        lines += [f"- {name}: {detail} ({', '.join(where)})" for (name, detail), where in notes.items()]
    lines += ["", "## Checks per variant", ""]
    for r in runs:
        lines += [f"### `{r['name']}`: {r['spec']['about']}", "",
                  f"Export: `export_lerobot(store, root, {r['spec'].get('episodes', 'None')}, "
                  f"vcodec={r['spec']['vcodec']!r}"
                  + "".join(f", {k}={val!r}" for k, val in r["spec"].get("export", {}).items()) + ")`", "",
                  "| backend | check | result | detail |", "|---|---|---|---|"]
        for c in r.get("result", {}).get("checks", []):
            if c.get("diffs") is not None:
                continue
            detail = c["detail"].replace("|", "\\|").replace("\n", "<br>")
            result = "note" if c.get("note") else ("PASS" if c["ok"] else "**FAIL**")
            result += " (reference)" if c.get("reference") else ""
            lines.append(f"| {c['backend']} | {c['name']} | {result} | {detail} |")
        lines.append("")
        if r.get("layout"):
            lines += ["<details><summary>export files (bytes)</summary>", "", "```", *r["layout"], "```", "",
                      "</details>", ""]
        for b, st in r.get("result", {}).get("per_backend", {}).items():
            if st.get("item_layout"):
                lines += [f"`ds[0]` as LeRobot returns it (backend `{b}`): "
                          + ", ".join(f"`{k}` {sh}" for k, sh in st["item_layout"].items()), ""]
                break
        diffs = [c for c in r.get("result", {}).get("checks", []) if c.get("diffs") is not None]
        if diffs:
            lines += ["Differences from the same episodes recorded by LeRobot's own writer (`LeRobotDataset.create`"
                      " + `add_frame`/`save_episode`), informational (what matters is a failed check):", ""]
            lines += [f"- {d}" for d in diffs[0]["diffs"]] or ["- none"]
            lines.append("")
        if r.get("stderr_tail") and not r.get("result"):
            lines += ["Checker stderr (tail):", "", "```", r["stderr_tail"], "```", ""]
    lines += [
        "## What is checked",
        "",
        "- `LeRobotDataset(repo_id='local/check', root=<export>)` opens offline with each video backend "
        "(`torchcodec`, lerobot's default where it loads, and `pyav`); `len(ds)`, `meta.total_episodes`, "
        "`num_frames`, fps, video/camera keys, `meta.tasks` (pandas index = task string, `iloc[task_index]`), "
        "`meta.stats`, `meta.episodes` rows.",
        "- `ds[i]` for the first and last frame and the start, middle and end of every episode: keys and shapes; "
        "state, action, reward, flags, policy_version and source_timestamp equal to the store's values (exactly, "
        "in the dtype LeRobot hands out; dtype changes are listed as notes); frame_index/episode_index/index/"
        "timestamp; `task` == the episode's instruction; each image is exactly the mp4 frame at (frames of "
        "earlier episodes in that file + k) / fps (reference decode of the whole file with PyAV), and its mean "
        f"abs error to the store's uint8 frame is <= {args.image_mae_max}/255.",
        "- A shuffled `torch.utils.data.DataLoader` (2 workers) over every frame (a frame whose timestamp misses "
        "its video frame by more than tolerance_s=1e-4 raises; random access is what exposes seek problems): "
        "actions exact, every image the right mp4 frame.",
        f"- `delta_timestamps`: action chunk of {args.chunk} at fps (== store actions[k:k+{args.chunk}], "
        "end-padded, `action_is_pad`), 2-step state and image history with `*_is_pad`.",
        "- `episodes=[last, 1]` subset (index mapping through the `index` column).",
        "- Reference (rows marked `(reference)`, not counted for our export): LeRobot's own writer records the "
        "first 2 episodes with the export's codec and file-size/chunk settings; its on-disk layout is diffed "
        "against ours, and it is read back in random order with each backend and with `StreamingLeRobotDataset`, "
        "with the same checks. A failure there as well means the problem is LeRobot's, not our exporter's.",
        "- `LeRobotDataset.resume()` on a copy of our export, recording one more episode with a new task, then "
        "reading old and new frames back.",
        "- LeRobot's dataset tools on our export: `recompute_stats` (vs our stats.json), `delete_episodes`, "
        "`aggregate_datasets` (two copies), `StreamingLeRobotDataset(root=export)` over every frame.",
        "",
        "## Commands",
        "",
        "```bash",
        "# lerobot venv (Python 3.12: lerobot >= 0.5 needs it). PyPI has only the CUDA torch build for Linux,",
        "# so this pulls torch 2.11 + nvidia-* wheels (several GB); everything here runs on CPU.",
        "/root/.pyenv/versions/3.12.1/bin/python3.12 -m venv /tmp/lerobot-venv",
        "/tmp/lerobot-venv/bin/pip install --upgrade pip",
        f"/tmp/lerobot-venv/bin/pip install \"lerobot[dataset]=={v.get('lerobot', '0.6.1')}\"",
        "# optional, for the torchcodec backend (lerobot's default): system FFmpeg shared libraries (Debian 12)",
        "apt-get install -y --no-install-recommends libavutil57 libavcodec59 libavformat59 libavdevice59 \\",
        "    libavfilter8 libswscale6 libswresample4",
        "",
        "# this check (project venv, Python 3.11), from the repository root",
        argv,
        "```",
        "",
        "Checker invocations (run by the script, lerobot venv, offline):",
        "",
        "```bash",
        *[r["cmd"] for r in runs],
        "```",
        "",
        f"Work directory: `{work}` (per variant: store, export, ground truth, checker JSON/stdout/stderr, LeRobot's "
        "own recording, resumed/edited copies).",
        "",
    ]
    return "\n".join(lines)


# name -> how the store is built and exported. Every variant is opened and checked the same way.
VARIANTS: dict[str, dict] = {
    "av1": {"vcodec": "libsvtav1", "about": "LeRobot's own encoder defaults (AV1, GOP 2, CRF 30)"},
    "h264": {"vcodec": "h264", "about": "h264, our fast option"},
    "hevc": {"vcodec": "hevc", "about": "hevc (the third codec LeRobot accepts)"},
    "hevc-bf0": {"vcodec": "hevc", "writer_options": {"bf": "0"},
                 "about": "PROPOSED FIX, simulated: hevc without B-frames (`bf=0` added to the encoder options by "
                          "patching `VideoEpisodeWriter` at run time; drop this variant once the exporter does it)"},
    "h264-many-files": {
        "vcodec": "h264",
        "export": {"chunks_size": 2, "data_files_size_in_mb": 0.002, "video_files_size_in_mb": 0.002},
        "about": "tiny file-size limits and chunks_size=2: one data/video file per episode, 3 chunk "
                 "directories, from_timestamp restarting at 0 in every file",
    },
    "av1-15fps": {"vcodec": "libsvtav1", "fps": 15.0, "about": "fps 15 (1/15 s is not exact in binary)"},
    "h264-reordered": {"vcodec": "h264", "episodes": [4, 1, 5, 0],
                       "about": "export of store episodes [4, 1, 5, 0] (a subset, out of order; renumbered 0..3)"},
}


@contextlib.contextmanager
def writer_options(extra: dict[str, str]):
    """Add encoder options to `VideoEpisodeWriter` (to try an exporter change without editing it)."""
    if not extra:
        yield
        return
    original = VideoEpisodeWriter.__init__

    def init(self, *a, **k):
        original(self, *a, **k)
        self.options.update(extra)
    VideoEpisodeWriter.__init__ = init
    try:
        yield
    finally:
        VideoEpisodeWriter.__init__ = original


def build_store(path: Path, n: int, image_size: int, fps: float, wallclock_offset: float) -> EpisodeStore:
    schema = dataclasses.replace(default_schema(image_size=image_size), fps=fps)
    store = EpisodeStore.create(path, schema)
    for i in range(n):
        ep = synthetic_episode(schema, i)
        if wallclock_offset and i == n - 1:
            # The last episode carries wall-clock (ROS / time.time()) stamps, as real-robot data does.
            ep.steps["timestamp"] = ep.steps["timestamp"] + wallclock_offset
        store.append_episode(ep)
    return store


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lerobot-python", required=True, help="python of a venv with lerobot[dataset] installed")
    ap.add_argument("--work", default="/tmp/lerobot_compat", help="scratch directory (replaced)")
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma list of {', '.join(VARIANTS)}")
    ap.add_argument("--backends", default="torchcodec,pyav",
                    help="LeRobot video backends to check ('default' = lerobot's own choice)")
    ap.add_argument("--chunk", type=int, default=16, help="action chunk length for delta_timestamps")
    ap.add_argument("--image-mae-max", type=float, default=8.0)
    ap.add_argument("--extra", default="native,resume,tools")
    ap.add_argument("--wallclock-offset", type=float, default=1.7638e9,
                    help="add this to the last episode's float64 timestamps (epoch seconds, like ROS stamps); 0: off")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    runs = []
    for name in [v for v in args.variants.split(",") if v]:
        spec = VARIANTS[name]
        sub = work / name
        sub.mkdir()
        store = build_store(sub / "store.zarr", args.episodes, args.image_size, spec.get("fps", 20.0),
                            args.wallclock_offset)
        order = spec.get("episodes", list(range(store.n_episodes)))
        npz, meta = dump_truth(store, sub, order)
        root = sub / "lerobot"
        t0 = time.perf_counter()
        with writer_options(spec.get("writer_options", {})):
            export_lerobot(store, root, order, vcodec=spec["vcodec"], **spec.get("export", {}))
        store.close()
        print(f"[{name}] exported in {time.perf_counter() - t0:.1f} s -> {root}", flush=True)
        layout = [f"{p.relative_to(root)}  {p.stat().st_size}" for p in sorted(root.rglob("*")) if p.is_file()]
        out = sub / "result.json"
        cmd = [args.lerobot_python, str(CHECKER), "--root", str(root), "--expected", str(npz), "--meta", str(meta),
               "--out", str(out), "--backends", args.backends, "--chunk", str(args.chunk),
               "--image-mae-max", str(args.image_mae_max), "--extra", args.extra,
               "--native-extra-options", json.dumps(spec.get("writer_options", {}))]
        shown = "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 " + shlex.join(cmd)
        print(shown, flush=True)
        proc = subprocess.run(cmd, env=lerobot_env(sub), capture_output=True, text=True, timeout=args.timeout)
        (sub / "checker.stdout").write_text(proc.stdout)
        (sub / "checker.stderr").write_text(proc.stderr)
        print("\n".join(line for line in proc.stdout.splitlines() if line.startswith("[FAIL]") or "passed," in line),
              flush=True)
        run = {"name": name, "spec": spec, "rc": proc.returncode, "cmd": shown, "layout": layout}
        if out.is_file():
            run["result"] = json.loads(out.read_text())
        if proc.returncode != 0 or not out.is_file():
            run["stderr_tail"] = "\n".join(proc.stderr.strip().splitlines()[-25:])
        runs.append(run)

    argv = " ".join([".venv/bin/python", "-m", "tests.vla.data.lerobot_compat.check",
                     *[shlex.quote(a) for a in sys.argv[1:]]])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(render(args, runs, work, argv))
    print(f"wrote {args.out}")
    ok = all(r["rc"] == 0 and r.get("result") for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
