"""Training windows read straight from a LeRobot v3.0 export: parquet columns + mp4 decoding.

The comparison path for the data-loading benchmark (EpisodeStore vs video decoding). It works the
way LeRobotDataset does: the low-dimensional columns of the needed parquet files are loaded once
(LeRobot memory-maps them through HF datasets), and each item decodes only the frames of its
observation window, seeking to the keyframe before them in the episode's mp4. Open containers are
kept per process and created lazily, so each DataLoader worker gets its own.

Item format (same as the EpisodeStore WindowDataset): ``images`` {cam: uint8 [To, H, W, 3]},
``state`` float32 [To, D], ``obs_mask`` bool [To], ``action`` float32 [Hc, A], ``action_mask``
bool [Hc], ``is_intervention`` bool [Hc], ``instruction``, ``task``, ``episode_index``,
``step_index``. Window at step t: observations t-To+1..t (steps before the episode start repeat
step 0, masked out), actions and flags t..t+Hc-1 (steps past the end repeat the last one, masked out).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch.utils.data import Dataset

from vla.data.lerobot_layout import (
    DEFAULT_TOLERANCE_S,
    IMAGE_FEATURE_PREFIX,
    LeRobotFormatError,
    fixed_list_to_numpy,
    load_meta,
)
from vla.data.lerobot_video import VideoFrameReader

_COLUMNS = ("observation.state", "action", "timestamp", "index", "task_index")


class LeRobotWindowDataset(Dataset):
    """One item per `stride`-th step of every selected episode (as LeRobotDataset indexes frames).

    `episodes` are LeRobot episode indices; the signature and items mirror `vla.data.dataset.WindowDataset`.
    """

    def __init__(
        self,
        root: str | Path,
        episodes: Sequence[int] | np.ndarray | None = None,
        *,
        obs_horizon: int = 1,
        action_horizon: int = 16,
        cameras: Sequence[str] | None = None,
        stride: int = 1,
        tolerance_s: float = DEFAULT_TOLERANCE_S,
        decoder_threads: int = 1,
    ) -> None:
        if obs_horizon < 1 or action_horizon < 1:
            raise ValueError(f"obs_horizon and action_horizon must be >= 1, got {obs_horizon}, {action_horizon}")
        if stride < 1:
            raise ValueError(f"stride must be >= 1, got {stride}")
        self.meta = meta = load_meta(root)
        self.obs_horizon, self.action_horizon = obs_horizon, action_horizon
        self.tolerance_s, self.decoder_threads = tolerance_s, decoder_threads
        all_cams = [k[len(IMAGE_FEATURE_PREFIX) :] for k in meta.video_keys if k.startswith(IMAGE_FEATURE_PREFIX)]
        if cameras is None:
            self.cameras = all_cams
        else:
            unknown = [c for c in cameras if c not in all_cams]
            if unknown:
                raise KeyError(f"{meta.root}: no camera '{unknown[0]}' (cameras: {', '.join(all_cams)})")
            self.cameras = list(cameras)
        self.rows = np.arange(meta.n_episodes) if episodes is None else np.array([meta.row(int(e)) for e in episodes])
        meta.check_files(self.rows)
        self._load_columns()
        lengths = meta.episodes["length"][self.rows].astype(np.int64)
        steps = [np.arange(0, n, stride, dtype=np.int64) for n in lengths]
        self._sample_row = np.repeat(self.rows, [len(s) for s in steps])
        self._sample_step = np.concatenate(steps) if steps else np.zeros(0, np.int64)
        has_task_name = "task_name" in meta.episodes
        self._task_name = {int(r): (str(meta.episodes["task_name"][r]) if has_task_name else None) for r in self.rows}
        self._video = {
            (int(r), cam): (
                meta.video_file(int(r), IMAGE_FEATURE_PREFIX + cam),
                float(meta.episodes[f"videos/{IMAGE_FEATURE_PREFIX}{cam}/from_timestamp"][r]),
            )
            for r in self.rows
            for cam in self.cameras
        }
        self._reader: VideoFrameReader | None = None
        self._reader_pid = -1

    def _load_columns(self) -> None:
        meta = self.meta
        files = sorted({meta.data_file(int(r)) for r in self.rows})
        tables = []
        for path in files:
            names = pq.read_schema(path).names
            missing = [c for c in _COLUMNS if c not in names]
            if missing:
                raise LeRobotFormatError(f"{path}: missing column(s) {', '.join(missing)}")
            cols = list(_COLUMNS) + (["is_intervention"] if "is_intervention" in names else [])
            tables.append(pq.read_table(path, columns=cols))
        table = pa.concat_tables(tables, promote_options="default")
        index = table.column("index").to_numpy()
        order = np.argsort(index, kind="stable")
        self._index = index[order]
        dims = {k: int(meta.features[k]["shape"][0]) for k in ("observation.state", "action")}
        where = f"{meta.root}/data"
        self._state = fixed_list_to_numpy(
            table.column("observation.state"),
            dims["observation.state"],
            np.float32,
            f"{where}: column 'observation.state'",
        )[order]
        self._action = fixed_list_to_numpy(
            table.column("action"), dims["action"], np.float32, f"{where}: column 'action'"
        )[order]
        self._timestamp = table.column("timestamp").to_numpy().astype(np.float64)[order]
        self._task_index = table.column("task_index").to_numpy()[order]
        self._intervention = (
            table.column("is_intervention").to_numpy(zero_copy_only=False).astype(bool)[order]
            if "is_intervention" in table.column_names
            else np.zeros(len(order), bool)
        )
        # Position of each selected episode's first frame in the loaded columns.
        self._start: dict[int, int] = {}
        for r in self.rows:
            r = int(r)
            first, n = int(meta.episodes["dataset_from_index"][r]), int(meta.episodes["length"][r])
            pos = int(np.searchsorted(self._index, first))
            if pos + n > len(self._index) or self._index[pos] != first or self._index[pos + n - 1] != first + n - 1:
                raise LeRobotFormatError(
                    f"{meta.data_file(r)}: frames {first}..{first + n - 1} of episode "
                    f"{int(meta.episodes['episode_index'][r])} are not all there"
                )
            self._start[r] = pos

    def __len__(self) -> int:
        return len(self._sample_row)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_reader"], state["_reader_pid"] = None, -1  # open containers never cross processes
        return state

    def _frames_reader(self) -> VideoFrameReader:
        if self._reader is None or self._reader_pid != os.getpid():
            self._reader = VideoFrameReader(self.tolerance_s, threads=self.decoder_threads)
            self._reader_pid = os.getpid()
        return self._reader

    def __getitem__(self, i: int) -> dict[str, Any]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"window {i} out of range ({len(self)} windows)")
        row, t = int(self._sample_row[i]), int(self._sample_step[i])
        n = int(self.meta.episodes["length"][row])
        start = self._start[row]
        obs_steps = np.arange(t - self.obs_horizon + 1, t + 1)
        obs_mask = obs_steps >= 0
        obs_steps = np.maximum(obs_steps, 0)
        act_steps = np.arange(t, t + self.action_horizon)
        action_mask = act_steps < n
        act_steps = np.minimum(act_steps, n - 1)
        reader = self._frames_reader()
        images = {}
        unique, inverse = np.unique(obs_steps, return_inverse=True)  # decode each padded frame once
        for cam in self.cameras:
            path, from_ts = self._video[(row, cam)]
            frames = reader.read(path, from_ts + self._timestamp[start + unique])
            images[cam] = torch.from_numpy(frames[inverse])
        task_index = int(self._task_index[start + t])
        instruction = self.meta.tasks[task_index]
        return {
            "images": images,
            "state": torch.from_numpy(self._state[start + obs_steps]),
            "future_state": torch.from_numpy(self._state[start + min(t + self.action_horizon, n - 1)]),
            "obs_mask": torch.from_numpy(obs_mask),
            "action": torch.from_numpy(self._action[start + act_steps]),
            "action_mask": torch.from_numpy(action_mask),
            "is_intervention": torch.from_numpy(self._intervention[start + act_steps]),
            "instruction": instruction,
            "task": self._task_name[row] or instruction,
            "episode_index": int(self.meta.episodes["episode_index"][row]),
            "step_index": t,
        }
