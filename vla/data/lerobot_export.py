"""Export an EpisodeStore as a LeRobot v3.0 dataset, written with pyarrow and av (no lerobot import).

Mapping (see `lerobot_layout.STEP_TO_FEATURE`): ``images/<cam>`` -> video feature
``observation.images.<cam>``; ``state`` -> ``observation.state``; ``action`` -> ``action``;
``reward`` -> ``next.reward``; ``is_intervention``, ``is_recovery``, ``policy_version`` keep their
names; our float64 ``timestamp`` -> ``source_timestamp`` (LeRobot's own ``timestamp`` is float32
``frame_index / fps``, the time of the frame within the episode's video span). The instruction is
the LeRobot task string; task name, success, source and seed are extra columns of meta/episodes.

The export is written into a temporary sibling directory and renamed into place at the end, so a
failed export never leaves a half-written dataset at `out_dir`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vla.data.lerobot_layout import (
    CODEBASE_VERSION,
    DATA_PATH,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_DATA_FILE_SIZE_IN_MB,
    DEFAULT_FEATURES,
    DEFAULT_VIDEO_FILE_SIZE_IN_MB,
    EPISODES_PATH,
    INFO_PATH,
    STATS_PATH,
    STEP_TO_FEATURE,
    TASKS_PATH,
    VIDEO_PATH,
    camera_key,
    next_chunk_file,
)
from vla.data.lerobot_video import VideoEpisodeWriter, video_info
from vla.data.schema import IMAGE_PREFIX, StoreSchema
from vla.data.store import EpisodeStore

VALID_VIDEO_CODECS = ("libsvtav1", "h264", "hevc")  # LeRobot's VALID_VIDEO_CODECS
QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
_MB = 1024 * 1024


def lerobot_features(schema: StoreSchema) -> dict[str, dict[str, Any]]:
    """info.json features of an export (video `info` is filled in after encoding)."""
    feats: dict[str, dict[str, Any]] = {}
    for cam, (h, w) in schema.cameras.items():
        feats[camera_key(cam)] = {
            "dtype": "video",
            "shape": [h, w, 3],
            "names": ["height", "width", "channels"],
        }
    feats["observation.state"] = {
        "dtype": "float32",
        "shape": [schema.state_dim],
        "names": [f"state_{i}" for i in range(schema.state_dim)],
    }
    feats["action"] = {
        "dtype": "float32",
        "shape": [schema.action_dim],
        "names": [f"action_{i}" for i in range(schema.action_dim)],
    }
    for key in ("reward", "is_intervention", "is_recovery", "policy_version", "timestamp"):
        feats[STEP_TO_FEATURE[key]] = {"dtype": str(schema.step_dtype(key)), "shape": [1], "names": None}
    feats.update({k: dict(v) for k, v in DEFAULT_FEATURES.items()})
    return feats


def _hf_features_metadata(features: dict[str, dict[str, Any]]) -> bytes:
    """The `huggingface` schema metadata that HF datasets writes, so `Dataset.from_parquet` types columns."""
    out: dict[str, Any] = {}
    for key, ft in features.items():
        if ft["dtype"] == "video":
            continue
        value = {"dtype": ft["dtype"], "_type": "Value"}
        out[key] = value if ft["shape"] == [1] else {"feature": value, "length": ft["shape"][0], "_type": "Sequence"}
    return json.dumps({"info": {"features": out}}).encode()


def _arrow_type(ft: dict[str, Any]) -> pa.DataType:
    scalar = pa.from_numpy_dtype(np.dtype(ft["dtype"]))
    return scalar if ft["shape"] == [1] else pa.list_(scalar, ft["shape"][0])


def _column(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    if pa.types.is_fixed_size_list(type_):
        flat = pa.array(np.ascontiguousarray(values).reshape(-1), type=type_.value_type)
        return pa.FixedSizeListArray.from_arrays(flat, type_.list_size)
    return pa.array(values.reshape(-1), type=type_)


def _lowdim_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    v = values.reshape(len(values), -1).astype(np.float64)
    stats = {
        "min": v.min(0),
        "max": v.max(0),
        "mean": v.mean(0),
        "std": v.std(0),
        "count": np.array([len(v)], np.int64),
    }
    qs = np.quantile(v, list(QUANTILES.values()), axis=0)
    stats.update({name: q for name, q in zip(QUANTILES, qs, strict=True)})
    return stats


def _image_stats(hist: np.ndarray, n_frames: int) -> dict[str, np.ndarray]:
    """Exact per-channel stats in [0, 1] from 256-bin histograms [3, 256], shaped (3, 1, 1) like LeRobot.

    LeRobot estimates them from a sample of frames; a histogram of every pixel is exact and cheap.
    """
    levels = np.arange(256, dtype=np.float64)
    n = hist.sum(1)
    mean = hist @ levels / n
    std = np.sqrt(np.maximum(hist @ levels**2 / n - mean**2, 0.0))
    cdf = np.cumsum(hist, 1) / n[:, None]
    nonzero = hist > 0
    stats = {
        "min": nonzero.argmax(1).astype(np.float64),
        "max": 255.0 - nonzero[:, ::-1].argmax(1),
        "mean": mean,
        "std": std,
    }
    for name, q in QUANTILES.items():
        stats[name] = (cdf < q).sum(1).astype(np.float64)  # smallest level with cdf >= q
    out = {k: (v / 255.0).reshape(3, 1, 1) for k, v in stats.items()}
    out["count"] = np.array([n_frames], np.int64)
    return out


def _histogram(frames: np.ndarray) -> np.ndarray:
    flat = frames.reshape(-1, 3)
    return np.stack([np.bincount(flat[:, c], minlength=256) for c in range(3)]).astype(np.float64)


class _DataWriter:
    """Appends episodes to data/chunk-XXX/file-XXX.parquet, one row group per episode, starting a new
    file once the next episode would take the current one past the size limit."""

    def __init__(self, root: Path, schema: pa.Schema, limit_mb: float, chunks_size: int) -> None:
        self.root, self.schema, self.limit, self.chunks_size = root, schema, limit_mb * _MB, chunks_size
        self.chunk = self.file = 0
        self.writer: pq.ParquetWriter | None = None
        self.bytes_in_file = 0

    def add_episode(self, table: pa.Table) -> dict[str, int]:
        # Arrow bytes over-estimate the compressed parquet size, so files stay under the limit.
        if self.writer is not None and self.bytes_in_file + table.nbytes > self.limit:
            self.close()
            self.chunk, self.file = next_chunk_file(self.chunk, self.file, self.chunks_size)
        if self.writer is None:
            path = self.root / DATA_PATH.format(chunk_index=self.chunk, file_index=self.file)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(path, self.schema, compression="snappy", use_dictionary=True)
            self.bytes_in_file = 0
        self.writer.write_table(table)  # one row group per episode keeps episodes randomly accessible
        self.bytes_in_file += table.nbytes
        return {"data/chunk_index": self.chunk, "data/file_index": self.file}

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _write_tasks(path: Path, tasks: list[str]) -> None:
    # pandas metadata makes pd.read_parquet return the task strings as the index, as LeRobot expects.
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [
            {
                "name": None,
                "field_name": None,
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": {"encoding": "UTF-8"},
            }
        ],
        "columns": [
            {
                "name": "task_index",
                "field_name": "task_index",
                "pandas_type": "int64",
                "numpy_type": "int64",
                "metadata": None,
            },
            {
                "name": "task",
                "field_name": "task",
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": None,
            },
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0",
    }
    table = pa.table({"task_index": pa.array(range(len(tasks)), pa.int64()), "task": pa.array(tasks, pa.string())})
    pq.write_table(table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()}), path)


def _stats_columns(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:
    return {f"stats/{feat}/{name}": value.tolist() for feat, s in stats.items() for name, value in s.items()}


def export_lerobot(
    store: EpisodeStore,
    out_dir: str | Path,
    episodes: Sequence[int] | np.ndarray | None = None,
    *,
    vcodec: str = "libsvtav1",
    crf: int = 30,
    gop: int = 2,
    robot_type: str | None = None,
    chunks_size: int = DEFAULT_CHUNK_SIZE,
    data_files_size_in_mb: float = DEFAULT_DATA_FILE_SIZE_IN_MB,
    video_files_size_in_mb: float = DEFAULT_VIDEO_FILE_SIZE_IN_MB,
    overwrite: bool = False,
) -> Path:
    """Write committed episodes of `store` (all, or `episodes` in that order) as a LeRobot v3.0 dataset.

    Episodes are renumbered 0..N-1 as LeRobot requires. Video defaults follow LeRobot's encoder
    (AV1 via libsvtav1, yuv420p, GOP 2, CRF 30); ``vcodec="h264"`` encodes and decodes faster.
    Returns `out_dir`.
    """
    import av

    out_dir = Path(out_dir)
    if vcodec not in VALID_VIDEO_CODECS:
        raise ValueError(f"vcodec {vcodec!r} is not one LeRobot reads; choose one of {', '.join(VALID_VIDEO_CODECS)}")
    try:
        av.codec.Codec(vcodec, "w")
    except Exception:  # av raises its own UnknownCodecError subclasses
        raise ValueError(f"vcodec {vcodec!r}: this av/ffmpeg build has no such encoder") from None
    if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise FileExistsError(f"{out_dir}: not empty (pass overwrite=True to replace it)")
    schema = store.schema
    for cam, (h, w) in schema.cameras.items():
        if h % 2 or w % 2:
            raise ValueError(f"camera '{cam}': image size {h}x{w}; yuv420p video needs even height and width")
    indices = np.arange(store.n_episodes) if episodes is None else np.asarray(episodes, dtype=np.int64)
    if indices.size == 0:
        raise ValueError(f"{store.path}: no episodes to export")
    for i in indices:
        store.episode_bounds(int(i))  # raises IndexError naming the episode
    fps = int(schema.fps) if float(schema.fps).is_integer() else float(schema.fps)
    features = lerobot_features(schema)
    data_features = {k: ft for k, ft in features.items() if ft["dtype"] != "video"}
    arrow_schema = pa.schema(
        [(k, _arrow_type(ft)) for k, ft in data_features.items()],
        metadata={b"huggingface": _hf_features_metadata(features)},
    )

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 otherwise prints a warning line per encoder
    videos = {
        cam: VideoEpisodeWriter(tmp, camera_key(cam), fps, vcodec, crf, gop, video_files_size_in_mb, chunks_size)
        for cam in schema.cameras
    }
    data = _DataWriter(tmp, arrow_schema, data_files_size_in_mb, chunks_size)
    try:
        tasks: dict[str, int] = {}
        rows: list[dict[str, Any]] = []
        lowdim: dict[str, list[np.ndarray]] = {k: [] for k in data_features}
        image_hist = {cam: np.zeros((3, 256)) for cam in schema.cameras}
        total = 0
        for new_index, store_index in enumerate(indices.tolist()):
            ep = store.episode(store_index)
            n = len(ep)
            task_index = tasks.setdefault(ep.instruction, len(tasks))
            frame_index = np.arange(n, dtype=np.int64)
            values = {STEP_TO_FEATURE[k]: np.asarray(ep.steps[k]) for k in STEP_TO_FEATURE}
            values.update(
                {
                    "timestamp": (frame_index / schema.fps).astype(np.float32),
                    "frame_index": frame_index,
                    "episode_index": np.full(n, new_index, np.int64),
                    "index": np.arange(total, total + n, dtype=np.int64),
                    "task_index": np.full(n, task_index, np.int64),
                }
            )
            table = pa.Table.from_arrays(
                [_column(values[k], arrow_schema.field(k).type) for k in data_features], schema=arrow_schema
            )
            ep_stats = {k: _lowdim_stats(values[k]) for k in data_features}
            for k in data_features:
                lowdim[k].append(values[k])
            row: dict[str, Any] = {
                "episode_index": new_index,
                "tasks": [ep.instruction],
                "length": n,
                **data.add_episode(table),
                "dataset_from_index": total,
                "dataset_to_index": total + n,
            }
            for cam, video in videos.items():
                frames = np.asarray(ep.steps[f"{IMAGE_PREFIX}{cam}"])
                row.update(video.add_episode(frames))
                hist = _histogram(frames)
                image_hist[cam] += hist
                ep_stats[camera_key(cam)] = _image_stats(hist, n)
            row.update(
                {
                    "meta/episodes/chunk_index": 0,
                    "meta/episodes/file_index": 0,
                    "task_name": ep.task,
                    "instruction": ep.instruction,
                    "success": bool(ep.success),
                    "source": ep.source,
                    "seed": int(ep.seed),
                }
            )
            row.update(_stats_columns(ep_stats))
            rows.append(row)
            total += n
        data.close()
        for video in videos.values():
            video.close()

        for cam, video in videos.items():
            assert video.first_path is not None
            features[camera_key(cam)]["info"] = video_info(video.first_path, gop=gop, crf=crf)
        episodes_path = tmp / EPISODES_PATH.format(chunk_index=0, file_index=0)
        episodes_path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), episodes_path, compression="snappy")
        _write_tasks(tmp / TASKS_PATH, list(tasks))
        stats = {k: _lowdim_stats(np.concatenate(v)) for k, v in lowdim.items()}
        stats.update({camera_key(cam): _image_stats(h, total) for cam, h in image_hist.items()})
        (tmp / STATS_PATH).write_text(
            json.dumps({k: {s: v.tolist() for s, v in d.items()} for k, d in stats.items()}, indent=4)
        )
        info = {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": robot_type,
            "total_episodes": len(indices),
            "total_frames": total,
            "total_tasks": len(tasks),
            "chunks_size": chunks_size,
            "data_files_size_in_mb": data_files_size_in_mb,
            "video_files_size_in_mb": video_files_size_in_mb,
            "fps": fps,
            "splits": {"train": f"0:{len(indices)}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if schema.cameras else None,
            "features": features,
        }
        (tmp / INFO_PATH).write_text(json.dumps(info, indent=4))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        for closable in [data, *videos.values()]:
            with contextlib.suppress(Exception):  # the original error is the one to report
                closable.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
