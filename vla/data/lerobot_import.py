"""Import a LeRobot v3.0 dataset (ours or LeRobot's own) into a new EpisodeStore.

The store's schema comes from the dataset's features: every ``observation.images.<cam>`` video
feature becomes camera ``<cam>``; ``observation.state`` and ``action`` give the dimensions. Our
extra features (``next.reward``, ``is_intervention``, ``is_recovery``, ``policy_version``,
``source_timestamp``) and episode columns (``task_name``, ``success``, ``source``, ``seed``) are read
when present; datasets recorded by LeRobot itself lack them and get defaults (reward 0, no
intervention or recovery, policy_version 0, timestamp = LeRobot's ``timestamp``, success
`default_success`, source `default_source`, seed -1, task name = the task string).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vla.data.lerobot_layout import (
    DEFAULT_TOLERANCE_S,
    IMAGE_FEATURE_PREFIX,
    INFO_PATH,
    STEP_TO_FEATURE,
    LeRobotFormatError,
    LeRobotMeta,
    fixed_list_to_numpy,
    load_meta,
    video_hwc,
)
from vla.data.lerobot_video import VideoFrameReader
from vla.data.schema import IMAGE_PREFIX, STEP_DTYPES, Episode, StoreSchema
from vla.data.store import EpisodeStore

_DEFAULTS = {"reward": 0, "is_intervention": False, "is_recovery": False, "policy_version": 0}


def schema_from_meta(meta: LeRobotMeta) -> StoreSchema:
    """The EpisodeStore schema of a LeRobot dataset; raises naming an unsupported or missing feature."""
    feats = meta.features
    where = meta.root / INFO_PATH
    images = [k for k, ft in feats.items() if ft["dtype"] == "image"]
    if images:
        raise LeRobotFormatError(
            f"{where}: feature '{images[0]}' stores images in parquet (dtype 'image'); "
            f"only video features are supported"
        )
    cameras: dict[str, tuple[int, int]] = {}
    for key in meta.video_keys:
        if not key.startswith(IMAGE_FEATURE_PREFIX):
            raise LeRobotFormatError(f"{where}: video feature '{key}' is not under '{IMAGE_FEATURE_PREFIX}'")
        info = feats[key].get("info") or {}
        if info.get("is_depth_map") or info.get("video.is_depth_map"):  # new key, and LeRobot's older one
            raise LeRobotFormatError(f"{where}: video feature '{key}' is a depth map; depth is not supported")
        h, w, _ = video_hwc(key, feats[key])
        cameras[key[len(IMAGE_FEATURE_PREFIX) :]] = (h, w)
    dims = {}
    for key in ("observation.state", "action"):
        if key not in feats:
            raise LeRobotFormatError(f"{where}: missing feature '{key}' (the store needs state and action vectors)")
        shape = [int(s) for s in feats[key]["shape"]]
        if len(shape) != 1:
            raise LeRobotFormatError(f"{where}: feature '{key}' has shape {shape}, expected a vector [D]")
        dims[key] = shape[0]
    return StoreSchema(cameras=cameras, state_dim=dims["observation.state"], action_dim=dims["action"], fps=meta.fps)


class _DataFiles:
    """Reads the frames of one episode from data/ parquet files, keeping the last file's table."""

    def __init__(self, meta: LeRobotMeta) -> None:
        self.meta = meta
        self._path: Path | None = None
        self._table: pa.Table | None = None
        self._episode_col: np.ndarray | None = None

    def episode(self, row: int) -> tuple[pa.Table, Path]:
        path = self.meta.data_file(row)
        if path != self._path:
            if not path.is_file():
                raise LeRobotFormatError(
                    f"{path}: missing data file of episode {int(self.meta.episodes['episode_index'][row])}"
                )
            self._table = pq.read_table(path)
            for col in ("episode_index", "frame_index", "index", "timestamp", "task_index"):
                if col not in self._table.column_names:
                    raise LeRobotFormatError(f"{path}: missing column '{col}'")
            self._episode_col = self._table.column("episode_index").to_numpy()
            self._path = path
        assert self._table is not None and self._episode_col is not None
        epi = int(self.meta.episodes["episode_index"][row])
        rows = np.flatnonzero(self._episode_col == epi)
        table = self._table.take(pa.array(rows))
        length = int(self.meta.episodes["length"][row])
        if table.num_rows != length:
            raise LeRobotFormatError(
                f"{path}: episode {epi} has {table.num_rows} frames, meta/episodes says length {length}"
            )
        frame_index = table.column("frame_index").to_numpy()
        if not np.array_equal(np.sort(frame_index), np.arange(length)):
            raise LeRobotFormatError(f"{path}: episode {epi}: frame_index is not 0..{length - 1}")
        table = table.take(pa.array(np.argsort(frame_index, kind="stable")))
        start = int(self.meta.episodes["dataset_from_index"][row])
        if not np.array_equal(table.column("index").to_numpy(), np.arange(start, start + length)):
            raise LeRobotFormatError(
                f"{path}: episode {epi}: column 'index' does not run from dataset_from_index "
                f"{start} to dataset_to_index {start + length}"
            )
        return table, path


def _episode_value(meta: LeRobotMeta, row: int, column: str, default: Any) -> Any:
    values = meta.episodes.get(column)
    if values is None or values[row] is None:
        return default
    return values[row]


def read_episode(
    meta: LeRobotMeta,
    row: int,
    schema: StoreSchema,
    data: _DataFiles,
    reader: VideoFrameReader,
    *,
    default_source: str = "demo",
    default_success: bool = True,
) -> Episode:
    """Episode `row` (position in meta.episodes) as an in-memory Episode in our schema."""
    table, path = data.episode(row)
    epi = int(meta.episodes["episode_index"][row])
    n = table.num_rows
    steps: dict[str, np.ndarray] = {}
    for key, feature in STEP_TO_FEATURE.items():
        dtype = STEP_DTYPES[key]
        if feature in table.column_names:
            width = {"state": schema.state_dim, "action": schema.action_dim}.get(key, 1)
            value = fixed_list_to_numpy(table.column(feature), width, dtype, f"{path}: column '{feature}'")
            steps[key] = value if key in ("state", "action") else value[:, 0]
        elif key in ("state", "action"):
            raise LeRobotFormatError(f"{path}: missing column '{feature}'")
        elif key == "timestamp":
            steps[key] = table.column("timestamp").to_numpy().astype(np.float64)
        else:
            steps[key] = np.full(n, _DEFAULTS[key], dtype)
    timestamps = table.column("timestamp").to_numpy().astype(np.float64)
    for cam, (h, w) in schema.cameras.items():
        key = IMAGE_FEATURE_PREFIX + cam
        from_ts = float(meta.episodes[f"videos/{key}/from_timestamp"][row])
        video = meta.video_file(row, key)
        frames = reader.read(video, from_ts + timestamps)
        if frames.shape[1:] != (h, w, 3):
            raise LeRobotFormatError(f"{video}: frames of shape {frames.shape[1:]}, feature '{key}' says {(h, w, 3)}")
        steps[f"{IMAGE_PREFIX}{cam}"] = frames
    task_index = np.unique(table.column("task_index").to_numpy())
    if len(task_index) != 1:
        raise LeRobotFormatError(
            f"{path}: episode {epi} has {len(task_index)} tasks {task_index.tolist()}; "
            f"the store holds one instruction per episode"
        )
    if not 0 <= task_index[0] < len(meta.tasks):
        raise LeRobotFormatError(f"{path}: episode {epi}: task_index {task_index[0]} not in meta/tasks.parquet")
    instruction = meta.tasks[int(task_index[0])]
    return Episode(
        steps=steps,
        task=str(_episode_value(meta, row, "task_name", instruction)),
        instruction=instruction,
        success=bool(_episode_value(meta, row, "success", default_success)),
        source=str(_episode_value(meta, row, "source", default_source)),
        seed=int(_episode_value(meta, row, "seed", -1)),
    )


def import_lerobot(
    in_dir: str | Path,
    store_path: str | Path,
    *,
    episodes: Sequence[int] | None = None,
    overwrite: bool = False,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    default_source: str = "demo",
    default_success: bool = True,
) -> EpisodeStore:
    """Create an EpisodeStore at `store_path` holding the dataset's episodes (all, or `episodes` by index).

    Validates meta/ and the presence of every referenced file before creating the store; an error
    names the file and the key. If reading fails part way the new store is removed again. Returns
    the new store opened read-only (reopen with mode="a" to append).
    """
    meta = load_meta(in_dir)
    schema = schema_from_meta(meta)
    rows = list(range(meta.n_episodes)) if episodes is None else [meta.row(int(e)) for e in episodes]
    meta.check_files(rows)
    store = EpisodeStore.create(store_path, schema, overwrite=overwrite)
    reader = VideoFrameReader(tolerance_s=tolerance_s, threads=0)  # 0 = ffmpeg picks; import is one process
    data = _DataFiles(meta)
    try:
        for row in rows:
            store.append_episode(
                read_episode(
                    meta,
                    row,
                    schema,
                    data,
                    reader,
                    default_source=default_source,
                    default_success=default_success,
                )
            )
    except BaseException:
        store.close()
        shutil.rmtree(store.path, ignore_errors=True)
        raise
    finally:
        reader.close()
    store.close()  # release the writer lock: the caller gets a reader
    return EpisodeStore.open(store.path)
