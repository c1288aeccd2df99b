"""LeRobot v3.0 export/import: round trip, on-disk layout and dtypes, bad input, window reading."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from vla.data.dataset import WindowDataset
from vla.data.lerobot import (
    LeRobotFormatError,
    LeRobotWindowDataset,
    export_lerobot,
    import_lerobot,
    load_meta,
)
from vla.data.schema import IMAGE_PREFIX
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode

N_EPISODES = 6
CAMS = ("agentview", "robot0_eye_in_hand")
PSNR_MIN_DB = 26.0  # measured ~29-31 dB at 32x32, CRF 30, yuv420p
MAE_MAX = 8.0  # pixel levels


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> EpisodeStore:
    schema = default_schema(image_size=32)
    s = EpisodeStore.create(tmp_path_factory.mktemp("src") / "store.zarr", schema)
    for seed in range(N_EPISODES):  # seeds 0 and 3 carry interventions; 0 and 5 fail
        s.append_episode(synthetic_episode(schema, seed, length=12 + 3 * seed))
    return s


@pytest.fixture(scope="module")
def export(store: EpisodeStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_lerobot(store, tmp_path_factory.mktemp("lr") / "ds", vcodec="h264")


def _assert_same_episodes(src: EpisodeStore, dst: EpisodeStore, pairs: list[tuple[int, int]]) -> None:
    for i, j in pairs:
        a, b = src.episode(i), dst.episode(j)
        assert (b.task, b.instruction, b.success, b.source, b.seed) == (
            a.task,
            a.instruction,
            a.success,
            a.source,
            a.seed,
        )
        for key, value in a.steps.items():
            got = b.steps[key]
            if key.startswith(IMAGE_PREFIX):
                assert got.shape == value.shape and got.dtype == np.uint8
                assert _psnr(got, value) >= PSNR_MIN_DB, (key, i)
                assert np.abs(got.astype(float) - value).mean() <= MAE_MAX, (key, i)
            else:
                assert got.dtype == value.dtype, key
                np.testing.assert_array_equal(got, value, err_msg=f"episode {i} key {key}")


# ---------------------------------------------------------------------------------------- round trip
def test_round_trip_keeps_values(store: EpisodeStore, export: Path, tmp_path: Path) -> None:
    back = import_lerobot(export, tmp_path / "back.zarr")
    assert back.mode == "r" and back.schema == store.schema  # returned as a reader: no writer lock held
    assert back.n_episodes == store.n_episodes and back.n_steps == store.n_steps
    _assert_same_episodes(store, back, [(i, i) for i in range(N_EPISODES)])
    np.testing.assert_array_equal(back.table().n_intervention_steps, store.table().n_intervention_steps)


def test_round_trip_av1_default_codec(store: EpisodeStore, tmp_path: Path) -> None:
    out = export_lerobot(store, tmp_path / "av1", episodes=[0, 3])  # LeRobot's default: libsvtav1
    info = json.loads((out / "meta/info.json").read_text())
    assert info["features"]["observation.images.agentview"]["info"]["video.codec"] == "av1"
    back = import_lerobot(out, tmp_path / "back.zarr")
    _assert_same_episodes(store, back, [(0, 0), (3, 1)])


def test_subset_export_renumbers_episodes(store: EpisodeStore, tmp_path: Path) -> None:
    out = export_lerobot(store, tmp_path / "sub", episodes=[4, 1], vcodec="h264")
    meta = load_meta(out)
    np.testing.assert_array_equal(meta.episodes["episode_index"], [0, 1])
    back = import_lerobot(out, tmp_path / "back.zarr")
    _assert_same_episodes(store, back, [(4, 0), (1, 1)])
    part = import_lerobot(out, tmp_path / "part.zarr", episodes=[1])
    _assert_same_episodes(store, part, [(1, 0)])


def test_small_file_limits_split_data_and_video_files(store: EpisodeStore, tmp_path: Path) -> None:
    out = export_lerobot(
        store,
        tmp_path / "split",
        vcodec="h264",
        chunks_size=2,
        data_files_size_in_mb=0.002,
        video_files_size_in_mb=0.002,
    )
    data_files = sorted(out.glob("data/chunk-*/file-*.parquet"))
    video_files = sorted(out.glob("videos/observation.images.agentview/chunk-*/file-*.mp4"))
    assert len(data_files) > 2 and len(video_files) > 2
    assert (out / "data/chunk-001/file-000.parquet").exists()  # 2 files per chunk directory
    meta = load_meta(out)
    for row in range(meta.n_episodes):
        rows = pq.read_table(meta.data_file(row), columns=["episode_index"]).column(0).to_numpy()
        assert row in rows
    _assert_same_episodes(store, import_lerobot(out, tmp_path / "b.zarr"), [(i, i) for i in range(N_EPISODES)])


# ---------------------------------------------------------------------------------------- layout
def test_info_json_follows_v3(store: EpisodeStore, export: Path) -> None:
    info = json.loads((export / "meta/info.json").read_text())
    assert set(info) == {
        "codebase_version",
        "robot_type",
        "total_episodes",
        "total_frames",
        "total_tasks",
        "chunks_size",
        "data_files_size_in_mb",
        "video_files_size_in_mb",
        "fps",
        "splits",
        "data_path",
        "video_path",
        "features",
    }
    assert info["codebase_version"] == "v3.0" and info["fps"] == 20 and isinstance(info["fps"], int)
    assert (info["total_episodes"], info["total_frames"]) == (N_EPISODES, store.n_steps)
    assert info["total_tasks"] == len(set(store.table().instruction))
    assert (info["chunks_size"], info["data_files_size_in_mb"], info["video_files_size_in_mb"]) == (
        1000,
        100,
        200,
    )
    assert info["splits"] == {"train": f"0:{N_EPISODES}"}
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    f = info["features"]
    assert f["observation.state"]["dtype"] == "float32" and f["observation.state"]["shape"] == [9]
    assert f["action"]["dtype"] == "float32" and f["action"]["shape"] == [7]
    expected = {
        "next.reward": "float32",
        "is_intervention": "bool",
        "is_recovery": "bool",
        "policy_version": "int32",
        "source_timestamp": "float64",
        "timestamp": "float32",
        "frame_index": "int64",
        "episode_index": "int64",
        "index": "int64",
        "task_index": "int64",
    }
    for key, dtype in expected.items():
        assert f[key]["dtype"] == dtype and f[key]["shape"] == [1], key
    for cam in CAMS:
        ft = f[f"observation.images.{cam}"]
        assert ft["dtype"] == "video" and ft["shape"] == [32, 32, 3]
        assert ft["names"] == ["height", "width", "channels"]
        assert ft["info"] == {
            "video.height": 32,
            "video.width": 32,
            "video.codec": "h264",
            "video.pix_fmt": "yuv420p",
            "is_depth_map": False,
            "video.fps": 20,
            "video.channels": 3,
            "has_audio": False,
            "video.g": 2,
            "video.crf": 30,
            "video.preset": None,
            "video.fast_decode": 0,
            "video.video_backend": "pyav",
            "video.extra_options": {},
        }
    assert all("/" not in key for key in f)  # LeRobot rejects '/' in feature names


def test_data_parquet_schema_and_rows(store: EpisodeStore, export: Path) -> None:
    path = export / "data/chunk-000/file-000.parquet"
    table = pq.read_table(path)
    s = table.schema
    assert s.field("observation.state").type == pa.list_(pa.float32(), 9)
    assert s.field("action").type == pa.list_(pa.float32(), 7)
    types = {
        "timestamp": pa.float32(),
        "frame_index": pa.int64(),
        "episode_index": pa.int64(),
        "index": pa.int64(),
        "task_index": pa.int64(),
        "next.reward": pa.float32(),
        "is_intervention": pa.bool_(),
        "is_recovery": pa.bool_(),
        "policy_version": pa.int32(),
        "source_timestamp": pa.float64(),
    }
    for key, type_ in types.items():
        assert s.field(key).type == type_, key
    assert not any(name.startswith("observation.images") for name in s.names)  # videos live in mp4 files
    hf = json.loads(s.metadata[b"huggingface"])["info"]["features"]
    assert hf["observation.state"] == {
        "feature": {"dtype": "float32", "_type": "Value"},
        "length": 9,
        "_type": "Sequence",
    }
    assert hf["timestamp"] == {"dtype": "float32", "_type": "Value"}
    assert pq.ParquetFile(path).num_row_groups == N_EPISODES  # one row group per episode
    np.testing.assert_array_equal(table.column("index").to_numpy(), np.arange(store.n_steps))
    frame = table.column("frame_index").to_numpy()
    np.testing.assert_allclose(table.column("timestamp").to_numpy(), frame / 20.0, rtol=0, atol=1e-6)
    starts = store.table().episode_starts
    for ep in range(N_EPISODES):
        assert frame[starts[ep]] == 0 and table.column("episode_index").to_numpy()[starts[ep]] == ep


def test_episode_metadata_locates_data_and_video(store: EpisodeStore, export: Path) -> None:
    ep = pq.read_table(export / "meta/episodes/chunk-000/file-000.parquet")
    required = [
        "episode_index",
        "tasks",
        "length",
        "dataset_from_index",
        "dataset_to_index",
        "data/chunk_index",
        "data/file_index",
        "meta/episodes/chunk_index",
        "meta/episodes/file_index",
        "task_name",
        "instruction",
        "success",
        "source",
        "seed",
    ]
    for cam in CAMS:
        required += [
            f"videos/observation.images.{cam}/{c}"
            for c in ("chunk_index", "file_index", "from_timestamp", "to_timestamp")
        ]
    assert set(required) <= set(ep.column_names)
    assert ep.schema.field("tasks").type == pa.list_(pa.string())
    stats_mean = ep.column("stats/observation.images.agentview/mean").to_pylist()[0]
    assert np.asarray(stats_mean).shape == (3, 1, 1)  # LeRobot's image stats shape
    assert np.asarray(ep.column("stats/observation.state/q99").to_pylist()[0]).shape == (9,)
    t = store.table()
    e = {name: ep.column(name).to_pylist() for name in ep.column_names}
    np.testing.assert_array_equal(e["dataset_from_index"], t.episode_starts)
    np.testing.assert_array_equal(e["dataset_to_index"], t.episode_ends)
    np.testing.assert_array_equal(e["length"], t.lengths)
    assert e["tasks"] == [[s] for s in t.instruction] and e["task_name"] == list(t.task)
    assert e["success"] == list(t.success) and e["source"] == list(t.source) and e["seed"] == list(t.seed)
    # Video spans are contiguous in the file and as long as the episode.
    key = "videos/observation.images.agentview"
    np.testing.assert_allclose(np.array(e[f"{key}/to_timestamp"]) - e[f"{key}/from_timestamp"], t.lengths / 20.0)
    np.testing.assert_allclose(e[f"{key}/from_timestamp"][1:], e[f"{key}/to_timestamp"][:-1])


def test_video_timestamps_locate_each_episode(store: EpisodeStore, export: Path) -> None:
    """Decode the whole mp4 independently: from_timestamp + timestamp[k] is frame k of the episode."""
    meta = load_meta(export)
    for cam in CAMS:
        key = f"observation.images.{cam}"
        with av.open(str(meta.video_file(0, key))) as c:
            decoded = [(float(f.pts * f.time_base), f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]
        times = np.array([t for t, _ in decoded])
        assert len(decoded) == store.n_steps
        for row in range(N_EPISODES):
            start, end = store.episode_bounds(row)
            frames = store.read(f"{IMAGE_PREFIX}{cam}", start, end)
            from_ts = meta.episodes[f"videos/{key}/from_timestamp"][row]
            for k in (0, end - start - 1):
                hit = np.flatnonzero(np.abs(times - (from_ts + k / 20.0)) < 1e-4)  # LeRobot's tolerance_s
                assert len(hit) == 1
                assert _psnr(decoded[hit[0]][1], frames[k]) >= PSNR_MIN_DB


def test_tasks_and_stats(store: EpisodeStore, export: Path) -> None:
    tasks = pq.read_table(export / "meta/tasks.parquet")
    assert tasks.schema.field("task_index").type == pa.int64()
    names = tasks.column("task").to_pylist()
    assert sorted(names) == sorted(set(store.table().instruction))
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]
    pd = pytest.importorskip("pandas")
    df = pd.read_parquet(export / "meta/tasks.parquet")  # how LeRobot reads it
    assert list(df.index) == names and df.iloc[1].name == names[1] and df.loc[names[0]].task_index == 0
    stats = json.loads((export / "meta/stats.json").read_text())
    state = store.read("state", 0, store.n_steps).astype(np.float64)
    np.testing.assert_allclose(stats["observation.state"]["mean"], state.mean(0), rtol=1e-9)
    np.testing.assert_allclose(stats["observation.state"]["q01"], np.quantile(state, 0.01, axis=0), rtol=1e-9)
    assert stats["observation.state"]["count"] == [store.n_steps]
    img = store.read("images/agentview", 0, store.n_steps).reshape(-1, 3) / 255.0
    np.testing.assert_allclose(np.array(stats["observation.images.agentview"]["mean"]).ravel(), img.mean(0))
    np.testing.assert_allclose(np.array(stats["observation.images.agentview"]["max"]).ravel(), img.max(0))
    assert set(stats["next.reward"]) == {
        "min",
        "max",
        "mean",
        "std",
        "count",
        "q01",
        "q10",
        "q50",
        "q90",
        "q99",
    }


def test_import_of_lerobot_recorded_dataset_uses_defaults(export: Path, tmp_path: Path) -> None:
    """A dataset recorded by LeRobot has none of our extra columns: import falls back to defaults."""
    ds = tmp_path / "plain"
    shutil.copytree(export, ds)
    ours = ["next.reward", "is_intervention", "is_recovery", "policy_version", "source_timestamp"]
    info = json.loads((ds / "meta/info.json").read_text())
    for key in ours:
        del info["features"][key]
    (ds / "meta/info.json").write_text(json.dumps(info))
    data = ds / "data/chunk-000/file-000.parquet"
    pq.write_table(pq.read_table(data).drop_columns(ours), data)
    ep_path = ds / "meta/episodes/chunk-000/file-000.parquet"
    pq.write_table(pq.read_table(ep_path).drop_columns(["task_name", "success", "source", "seed"]), ep_path)
    back = import_lerobot(ds, tmp_path / "plain.zarr")
    e = back.episode(0)
    assert (e.task, e.success, e.source, e.seed) == (e.instruction, True, "demo", -1)
    assert not e.steps["is_intervention"].any() and not e.steps["reward"].any()
    np.testing.assert_allclose(e.steps["timestamp"], np.arange(len(e)) / 20.0, atol=1e-6)


# ---------------------------------------------------------------------------------------- bad input
def _broken_copy(export: Path, tmp_path: Path) -> Path:
    ds = tmp_path / "broken"
    shutil.copytree(export, ds)
    return ds


def test_missing_info_json(export: Path, tmp_path: Path) -> None:
    ds = _broken_copy(export, tmp_path)
    (ds / "meta/info.json").unlink()
    with pytest.raises(LeRobotFormatError, match=r"meta/info\.json: missing"):
        import_lerobot(ds, tmp_path / "x.zarr")
    assert not (tmp_path / "x.zarr").exists()


def test_wrong_codebase_version(export: Path, tmp_path: Path) -> None:
    ds = _broken_copy(export, tmp_path)
    info = json.loads((ds / "meta/info.json").read_text())
    info["codebase_version"] = "v2.1"
    (ds / "meta/info.json").write_text(json.dumps(info))
    with pytest.raises(LeRobotFormatError, match=r"info\.json: codebase_version 'v2\.1'.*'v3\.0'.*v21_to_v30"):
        import_lerobot(ds, tmp_path / "x.zarr")


def test_missing_video_file(export: Path, tmp_path: Path) -> None:
    ds = _broken_copy(export, tmp_path)
    video = ds / "videos/observation.images.robot0_eye_in_hand/chunk-000/file-000.mp4"
    video.unlink()
    with pytest.raises(
        LeRobotFormatError,
        match=rf"{video}: missing video file of episode 0 "
        r"\(feature 'observation.images.robot0_eye_in_hand'\)",
    ):
        import_lerobot(ds, tmp_path / "x.zarr")
    assert not (tmp_path / "x.zarr").exists()
    with pytest.raises(LeRobotFormatError, match="missing video file"):
        LeRobotWindowDataset(ds)


def test_wrong_feature_shape_and_missing_keys(export: Path, tmp_path: Path) -> None:
    ds = _broken_copy(export, tmp_path)
    info_path = ds / "meta/info.json"
    good = json.loads(info_path.read_text())
    bad = json.loads(info_path.read_text())
    bad["features"]["observation.state"]["shape"] = [3, 3]
    info_path.write_text(json.dumps(bad))
    with pytest.raises(LeRobotFormatError, match=r"feature 'observation.state' has shape \[3, 3\], expected a vector"):
        import_lerobot(ds, tmp_path / "x.zarr")
    bad = json.loads(json.dumps(good))
    del bad["fps"]
    info_path.write_text(json.dumps(bad))
    with pytest.raises(LeRobotFormatError, match=r"info\.json: missing key\(s\) fps"):
        load_meta(ds)
    bad = json.loads(json.dumps(good))
    bad["total_frames"] += 1
    info_path.write_text(json.dumps(bad))
    with pytest.raises(LeRobotFormatError, match="total_frames"):
        load_meta(ds)
    info_path.write_text(json.dumps(good))
    ep_path = ds / "meta/episodes/chunk-000/file-000.parquet"
    pq.write_table(pq.read_table(ep_path).drop_columns(["dataset_to_index"]), ep_path)
    with pytest.raises(LeRobotFormatError, match=r"meta/episodes: missing column\(s\) dataset_to_index"):
        load_meta(ds)


def test_data_file_disagreeing_with_metadata(export: Path, tmp_path: Path) -> None:
    ds = _broken_copy(export, tmp_path)
    data = ds / "data/chunk-000/file-000.parquet"
    table = pq.read_table(data)
    pq.write_table(table.slice(1), data)  # drop the first frame of episode 0
    with pytest.raises(LeRobotFormatError, match=rf"{data}: episode 0 has \d+ frames, meta/episodes says length"):
        import_lerobot(ds, tmp_path / "x.zarr")
    assert not (tmp_path / "x.zarr").exists()  # a failed import removes the new store


def test_export_rejects_bad_arguments(store: EpisodeStore, export: Path, tmp_path: Path) -> None:
    with pytest.raises(FileExistsError, match="not empty"):
        export_lerobot(store, export, vcodec="h264")
    with pytest.raises(ValueError, match="vcodec 'mpeg4'"):
        export_lerobot(store, tmp_path / "x", vcodec="mpeg4")
    with pytest.raises(IndexError, match="episode 99"):
        export_lerobot(store, tmp_path / "x", episodes=[99], vcodec="h264")
    odd = EpisodeStore.create(tmp_path / "odd.zarr", default_schema(image_size=15))
    odd.append_episode(synthetic_episode(odd.schema, 1, length=3))
    with pytest.raises(ValueError, match="15x15; yuv420p video needs even"):
        export_lerobot(odd, tmp_path / "x", vcodec="h264")
    assert not (tmp_path / "x").exists()


def test_failed_export_leaves_nothing(store: EpisodeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vla.data import lerobot_export

    calls = []

    def failing_add(self: object, frames: np.ndarray) -> None:
        calls.append(1)
        raise OSError("disk full")

    monkeypatch.setattr(lerobot_export.VideoEpisodeWriter, "add_episode", failing_add)
    with pytest.raises(OSError, match="disk full"):
        export_lerobot(store, tmp_path / "out", vcodec="h264")
    assert calls and list(tmp_path.iterdir()) == []  # neither the dataset nor its temporary directory


# ---------------------------------------------------------------------------------------- windows
def test_window_dataset_matches_store_windows(store: EpisodeStore, export: Path) -> None:
    ref = WindowDataset(store, obs_horizon=2, action_horizon=16)
    lr = LeRobotWindowDataset(export, obs_horizon=2, action_horizon=16)
    assert len(lr) == len(ref) == store.n_steps
    rng = np.random.default_rng(0)
    starts, ends = store.table().episode_starts, store.table().episode_ends
    picks = np.concatenate([starts, ends - 1, rng.integers(0, len(ref), 20)])
    for i in rng.permutation(picks):  # random order: every item seeks on its own
        a, b = ref[int(i)], lr[int(i)]
        assert set(a) == set(b)
        for key in ("state", "future_state", "obs_mask", "action", "action_mask", "is_intervention"):
            assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key
        for key in ("instruction", "task", "episode_index", "step_index"):
            assert a[key] == b[key], key
        for cam in CAMS:
            assert b["images"][cam].shape == (2, 32, 32, 3) and b["images"][cam].dtype == torch.uint8
            assert _psnr(a["images"][cam].numpy(), b["images"][cam].numpy()) >= PSNR_MIN_DB - 2


def test_window_dataset_in_dataloader_workers(export: Path) -> None:
    ds = LeRobotWindowDataset(export, episodes=[1, 2], obs_horizon=2, action_horizon=4, cameras=["agentview"], stride=3)
    assert len(ds) == sum(len(range(0, n, 3)) for n in (15, 18))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2, shuffle=True)
    batches = list(loader)
    assert sum(len(b["step_index"]) for b in batches) == len(ds)
    assert batches[0]["images"]["agentview"].shape[1:] == (2, 32, 32, 3)
    assert set(torch.cat([b["episode_index"] for b in batches]).tolist()) == {1, 2}
    with pytest.raises(KeyError, match="no camera 'wrist'"):
        LeRobotWindowDataset(export, cameras=["wrist"])
