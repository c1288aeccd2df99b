"""LeRobot v3.0 dataset layout: constants, metadata loading with validation, and frame decoding.

Shared by `lerobot_export`, `lerobot_import` and `lerobot_window`. The layout follows LeRobot's
published v3.0 format (``lerobot.datasets.utils`` / ``lerobot_dataset.py``)::

    meta/info.json                                   codebase_version "v3.0", fps, features, templates
    meta/stats.json                                  per-feature min/max/mean/std/count/q01..q99
    meta/tasks.parquet                               task string (pandas index "task") -> task_index
    meta/episodes/chunk-000/file-000.parquet         one row per episode (offsets, video spans, stats)
    data/chunk-XXX/file-XXX.parquet                  one row per frame, several episodes per file
    videos/<video_key>/chunk-XXX/file-XXX.mp4        several episodes per file, located by timestamps

LeRobot finds the frame of step k of an episode at ``from_timestamp + timestamp[k]`` in the
episode's mp4 and accepts it within ``tolerance_s`` (1e-4 s); see `lerobot_video`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CODEBASE_VERSION = "v3.0"
DEFAULT_CHUNK_SIZE = 1000  # files per chunk directory
DEFAULT_DATA_FILE_SIZE_IN_MB = 100
DEFAULT_VIDEO_FILE_SIZE_IN_MB = 200
DEFAULT_TOLERANCE_S = 1e-4  # LeRobotDataset's default frame-time tolerance

INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
EPISODES_DIR = "meta/episodes"
CHUNK_FILE_PATTERN = "chunk-{chunk_index:03d}/file-{file_index:03d}"
EPISODES_PATH = EPISODES_DIR + "/" + CHUNK_FILE_PATTERN + ".parquet"
DATA_PATH = "data/" + CHUNK_FILE_PATTERN + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE_PATTERN + ".mp4"

# LeRobot adds these to every dataset (DEFAULT_FEATURES).
DEFAULT_FEATURES: dict[str, dict[str, Any]] = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
IMAGE_FEATURE_PREFIX = "observation.images."
# Our non-image step keys -> LeRobot feature names. `timestamp` in LeRobot is float32 seconds
# since the episode start (used to find video frames); our float64 clock goes to `source_timestamp`.
STEP_TO_FEATURE = {
    "state": "observation.state",
    "action": "action",
    "reward": "next.reward",
    "is_intervention": "is_intervention",
    "is_recovery": "is_recovery",
    "policy_version": "policy_version",
    "timestamp": "source_timestamp",
}
# Our per-episode metadata, stored as extra columns of meta/episodes (LeRobot keeps unknown columns).
EPISODE_META_COLUMNS = ("task_name", "instruction", "success", "source", "seed")
REQUIRED_INFO_KEYS = (
    "codebase_version",
    "fps",
    "features",
    "data_path",
    "chunks_size",
    "total_episodes",
    "total_frames",
    "total_tasks",
)
REQUIRED_EPISODE_COLUMNS = (
    "episode_index",
    "tasks",
    "length",
    "dataset_from_index",
    "dataset_to_index",
    "data/chunk_index",
    "data/file_index",
)
VIDEO_EPISODE_COLUMNS = ("chunk_index", "file_index", "from_timestamp", "to_timestamp")


class LeRobotFormatError(ValueError):
    """A LeRobot dataset on disk is missing a file or has a wrong key, shape, dtype or version."""


def camera_key(camera: str) -> str:
    return f"{IMAGE_FEATURE_PREFIX}{camera}"


def next_chunk_file(chunk_index: int, file_index: int, chunks_size: int) -> tuple[int, int]:
    """The (chunk, file) after this one: a chunk directory holds at most `chunks_size` files."""
    file_index += 1
    if file_index >= chunks_size:
        return chunk_index + 1, 0
    return chunk_index, file_index


def video_hwc(key: str, feature: dict[str, Any]) -> tuple[int, int, int]:
    """(height, width, channels) of a video feature, accepting LeRobot's HWC and legacy CHW shapes."""
    shape = [int(s) for s in feature.get("shape", [])]
    names = feature.get("names") or ["height", "width", "channels"]
    if len(shape) != 3:
        raise LeRobotFormatError(f"{INFO_PATH}: feature '{key}' has shape {shape}, expected [height, width, 3]")
    if names and str(names[0]).startswith("channel"):
        shape = [shape[1], shape[2], shape[0]]
    if shape[2] != 3:
        raise LeRobotFormatError(f"{INFO_PATH}: feature '{key}' has {shape[2]} channels; only RGB (3) is supported")
    return shape[0], shape[1], shape[2]


@dataclass
class LeRobotMeta:
    """A validated LeRobot v3.0 dataset's metadata (everything but the frame data)."""

    root: Path
    info: dict[str, Any]
    tasks: list[str]  # position = task_index
    episodes: dict[str, np.ndarray]  # meta/episodes columns (stats/* dropped), sorted by episode_index

    @property
    def fps(self) -> float:
        return float(self.info["fps"])

    @property
    def features(self) -> dict[str, dict[str, Any]]:
        return self.info["features"]

    @property
    def video_keys(self) -> list[str]:
        return [k for k, ft in self.features.items() if ft.get("dtype") == "video"]

    @property
    def n_episodes(self) -> int:
        return len(self.episodes["episode_index"])

    def row(self, episode_index: int) -> int:
        """Position of an episode in `episodes` (episode indices need not start at 0)."""
        pos = np.searchsorted(self.episodes["episode_index"], episode_index)
        if pos >= self.n_episodes or self.episodes["episode_index"][pos] != episode_index:
            raise IndexError(
                f"{self.root}: no episode {episode_index} "
                f"(have {self.n_episodes} episodes, indices {self.episodes['episode_index'][:5]}...)"
            )
        return int(pos)

    def data_file(self, row: int) -> Path:
        ep = self.episodes
        return self.root / self.info["data_path"].format(
            chunk_index=int(ep["data/chunk_index"][row]), file_index=int(ep["data/file_index"][row])
        )

    def video_file(self, row: int, key: str) -> Path:
        ep = self.episodes
        return self.root / self.info["video_path"].format(
            video_key=key,
            chunk_index=int(ep[f"videos/{key}/chunk_index"][row]),
            file_index=int(ep[f"videos/{key}/file_index"][row]),
        )

    def check_files(self, rows: list[int] | np.ndarray | None = None) -> None:
        """Raise naming the first data or video file that the selected episodes need and is missing."""
        rows = range(self.n_episodes) if rows is None else rows
        seen: set[Path] = set()
        for row in rows:
            epi = int(self.episodes["episode_index"][row])
            for key, path in [("data", self.data_file(row))] + [(k, self.video_file(row, k)) for k in self.video_keys]:
                if path in seen:
                    continue
                if not path.is_file():
                    raise LeRobotFormatError(
                        f"{path}: missing {'data' if key == 'data' else 'video'} file "
                        f"of episode {epi}" + ("" if key == "data" else f" (feature '{key}')")
                    )
                seen.add(path)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise LeRobotFormatError(f"{path}: missing (not a LeRobot v3.0 dataset?)")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise LeRobotFormatError(f"{path}: invalid JSON ({e})") from None
    if not isinstance(data, dict):
        raise LeRobotFormatError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _check_info(root: Path, info: dict[str, Any]) -> None:
    path = root / INFO_PATH
    version = info.get("codebase_version")
    if version != CODEBASE_VERSION:
        hint = (
            " (v2.x keeps one file per episode; convert it with LeRobot's convert_dataset_v21_to_v30)"
            if isinstance(version, str) and version.startswith("v2")
            else ""
        )
        raise LeRobotFormatError(f"{path}: codebase_version {version!r}, this reader needs {CODEBASE_VERSION!r}{hint}")
    missing = [k for k in REQUIRED_INFO_KEYS if k not in info]
    if missing:
        raise LeRobotFormatError(f"{path}: missing key(s) {', '.join(missing)}")
    features = info["features"]
    if not isinstance(features, dict):
        raise LeRobotFormatError(f"{path}: 'features' must be an object, got {type(features).__name__}")
    for key, ft in features.items():
        if not isinstance(ft, dict) or "dtype" not in ft or "shape" not in ft:
            raise LeRobotFormatError(f"{path}: feature '{key}' needs 'dtype' and 'shape', got {ft!r}")
    for key, want in DEFAULT_FEATURES.items():
        if key not in features:
            raise LeRobotFormatError(f"{path}: missing default feature '{key}'")
        if features[key]["dtype"] != want["dtype"]:
            raise LeRobotFormatError(
                f"{path}: feature '{key}' has dtype {features[key]['dtype']!r}, expected {want['dtype']!r}"
            )
    if any(ft["dtype"] == "video" for ft in features.values()) and not info.get("video_path"):
        raise LeRobotFormatError(f"{path}: video features but no 'video_path' template")
    if not float(info["fps"]) > 0:
        raise LeRobotFormatError(f"{path}: fps must be positive, got {info['fps']!r}")


def _read_tasks(root: Path) -> list[str]:
    path = root / TASKS_PATH
    if not path.is_file():
        raise LeRobotFormatError(f"{path}: missing")
    table = pq.read_table(path)
    # pandas writes the task strings as its index: named "task" by recent LeRobot, else unnamed.
    name = next((n for n in ("task", "__index_level_0__") if n in table.column_names), None)
    if name is None or "task_index" not in table.column_names:
        raise LeRobotFormatError(
            f"{path}: needs columns 'task' (or the pandas index) and 'task_index', found {table.column_names}"
        )
    index = np.asarray(table.column("task_index").to_numpy(zero_copy_only=False), dtype=np.int64)
    names = [str(s) for s in table.column(name).to_pylist()]
    if sorted(index.tolist()) != list(range(len(index))):
        raise LeRobotFormatError(f"{path}: task_index must be 0..{len(index) - 1}, got {sorted(index.tolist())}")
    tasks = [""] * len(index)
    for i, s in zip(index, names, strict=True):
        tasks[int(i)] = s
    return tasks


def _read_episodes(root: Path, info: dict[str, Any]) -> dict[str, np.ndarray]:
    files = sorted((root / EPISODES_DIR).glob("*/*.parquet"))
    if not files:
        raise LeRobotFormatError(f"{root / EPISODES_DIR}: no episode metadata files (chunk-XXX/file-XXX.parquet)")
    tables = []
    for f in files:
        schema = pq.read_schema(f)
        cols = [c for c in schema.names if not c.startswith("stats/")]
        tables.append(pq.read_table(f, columns=cols))
    try:
        table = pa.concat_tables(tables, promote_options="default")
    except pa.ArrowInvalid as e:
        raise LeRobotFormatError(f"{root / EPISODES_DIR}: episode files disagree on columns ({e})") from None
    video_keys = [k for k, ft in info["features"].items() if ft["dtype"] == "video"]
    required = list(REQUIRED_EPISODE_COLUMNS) + [f"videos/{k}/{c}" for k in video_keys for c in VIDEO_EPISODE_COLUMNS]
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise LeRobotFormatError(f"{root / EPISODES_DIR}: missing column(s) {', '.join(missing)}")
    cols: dict[str, np.ndarray] = {}
    for name in table.column_names:
        col = table.column(name)
        if (
            pa.types.is_list(col.type)
            or pa.types.is_large_list(col.type)
            or pa.types.is_string(col.type)
            or pa.types.is_large_string(col.type)
        ):
            cols[name] = np.array([*col.to_pylist(), None], dtype=object)[:-1]  # keep lists as objects
        else:
            cols[name] = col.to_numpy(zero_copy_only=False)
    order = np.argsort(cols["episode_index"], kind="stable")
    cols = {k: v[order] for k, v in cols.items()}
    n = len(order)
    if n != int(info["total_episodes"]):
        raise LeRobotFormatError(
            f"{root / EPISODES_DIR}: {n} episodes, {INFO_PATH} says total_episodes={info['total_episodes']}"
        )
    length = cols["length"].astype(np.int64)
    span = cols["dataset_to_index"].astype(np.int64) - cols["dataset_from_index"].astype(np.int64)
    bad = np.flatnonzero(span != length)
    if bad.size:
        i = bad[0]
        raise LeRobotFormatError(
            f"{root / EPISODES_DIR}: episode {cols['episode_index'][i]}: dataset_to_index - "
            f"dataset_from_index = {span[i]} but length = {length[i]}"
        )
    if int(length.sum()) != int(info["total_frames"]):
        raise LeRobotFormatError(
            f"{root / EPISODES_DIR}: episode lengths sum to {int(length.sum())}, "
            f"{INFO_PATH} says total_frames={info['total_frames']}"
        )
    return cols


def load_meta(root: str | Path) -> LeRobotMeta:
    """Read and validate meta/ of a LeRobot v3.0 dataset; errors name the file and the key."""
    root = Path(root)
    if not root.is_dir():
        raise LeRobotFormatError(f"{root}: no such directory")
    info = _read_json(root / INFO_PATH)
    _check_info(root, info)
    tasks = _read_tasks(root)
    if len(tasks) != int(info["total_tasks"]):
        raise LeRobotFormatError(
            f"{root / TASKS_PATH}: {len(tasks)} tasks, {INFO_PATH} says total_tasks={info['total_tasks']}"
        )
    return LeRobotMeta(root=root, info=info, tasks=tasks, episodes=_read_episodes(root, info))


def fixed_list_to_numpy(column: pa.ChunkedArray | pa.Array, width: int, dtype: np.dtype, where: str) -> np.ndarray:
    """[N, width] from a parquet list column (fixed-size as HF datasets writes it, or variable)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    if pa.types.is_fixed_size_list(column.type) or pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        values = column.flatten().to_numpy(zero_copy_only=False)
    else:
        values = column.to_numpy(zero_copy_only=False)  # a scalar column (shape [1])
    if values.size != n * width:
        raise LeRobotFormatError(f"{where}: {values.size} values for {n} frames, expected shape [{n}, {width}]")
    return values.astype(dtype, copy=False).reshape(n, width)
