"""Property-based hostile configs, overrides and checkpoints, and the `vla` command on broken files:
each is one clear `error:` line naming the thing, exit code 2."""

import dataclasses
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import zarr
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.hostile.cases import (
    CHECKPOINT_DAMAGE,
    EXPORT_DAMAGE,
    NotApplicable,
    bad_override,
    bad_preset,
    build_store,
    check_export,
    damage_checkpoint,
    damage_export,
    fresh_copy,
    judge,
    load_checkpoint_all,
    mismatched_demos,
    refine_check,
)
from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.config import load_config
from vla.job import JobConfig
from vla.policy.checkpoint import save_checkpoint
from vla.policy.model import VLAModel

NEVER = object()  # a malformed config that loads without an error is silent
SCALAR_FIELDS = [f"demos.{f.name}" for f in dataclasses.fields(JobConfig().demos) if f.type in ("int", "float", "bool")]
# out_dir is left out: any string is a valid folder name, so "out_dir=0x" is not malformed
ALL_FIELDS = [f.name for f in dataclasses.fields(JobConfig) if f.type != "str"] + SCALAR_FIELDS


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=65135093)  # "stages=- - x": a nested list reached validate(), whose error named no key
def test_malformed_override_is_one_clear_error(seed: int) -> None:
    rng = random.Random(seed)
    override, needles = bad_override(rng, SCALAR_FIELDS if rng.random() < 0.6 else ALL_FIELDS)
    verdict = judge(override, lambda: load_config(JobConfig, "job", "debug", [override]), NEVER, needles)
    assert verdict.kind == "clear", verdict


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_malformed_preset_file_is_one_clear_error(seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path, needles = bad_preset(random.Random(seed), Path(tmp), SCALAR_FIELDS)
        verdict = judge(path.read_text()[:40], lambda: load_config(JobConfig, "job", str(path)), NEVER, needles)
    assert verdict.kind == "clear", verdict


@pytest.fixture(scope="module")
def checkpoint() -> Iterator[tuple[Path, dict]]:
    data = LineDataset(n=8, cameras=("agentview",), instructions=("follow the line",))
    torch.manual_seed(0)
    model = VLAModel(small_config(("agentview",)), data.stats())
    model.language.encode(["follow the line"])
    ema = {k: v + 0.5 if v.is_floating_point() and "normalizer" not in k else v for k, v in model.state_dict().items()}
    with tempfile.TemporaryDirectory(prefix="hostile_ckpt_") as tmp:
        path = save_checkpoint(Path(tmp) / "ckpt", model, data.stats(), ema_state=ema)
        yield path, load_checkpoint_all(path)


# Values no checkpoint may hold, in intact files with a manifest that matches them
VALUE_DAMAGE = CHECKPOINT_DAMAGE[5:]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(CHECKPOINT_DAMAGE), seed=st.integers(0, 2**32 - 1))
@example(kind="nan_weight", seed=0)
@example(kind="nan_stats", seed=0)
@example(kind="huge_config", seed=0)
@example(kind="nan_embedding", seed=0)
def test_damaged_checkpoint_is_a_clear_error(checkpoint: tuple[Path, dict], kind: str, seed: int) -> None:
    src, reference = checkpoint
    with tempfile.TemporaryDirectory() as tmp:
        path = fresh_copy(src, Path(tmp) / "ckpt")
        try:
            case, needles = damage_checkpoint(path, kind, random.Random(seed))
        except NotApplicable:  # the fixture has instructions.safetensors: never here
            pytest.fail(f"{kind}: not applicable to the test checkpoint")
        verdict = judge(case, lambda: load_checkpoint_all(path), reference, needles)
    # a NaN weight, statistic or embedding, or an absurd size, is read by every load: never harmless
    assert (verdict.kind == "clear") if kind in VALUE_DAMAGE else (verdict.kind in ("clear", "harmless")), verdict


@pytest.fixture(scope="module")
def export(checkpoint: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from vla.policy.export import export_onnx

    folder = export_onnx(checkpoint[0], tmp_path_factory.mktemp("hostile_export") / "onnx")
    return folder, check_export(folder)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(EXPORT_DAMAGE), seed=st.integers(0, 2**32 - 1))
@example(kind="truncate", seed=0)
@example(kind="garbage", seed=0)
@example(kind="runtime_json", seed=0)
@example(kind="nan_scale", seed=0)
def test_damaged_export_is_a_clear_error_in_the_eval_parent(export: tuple[Path, object], kind: str,
                                                            seed: int) -> None:
    """A truncated or garbage .onnx (or its weights), a broken runtime.json or a NaN action scale
    is one line naming the file from the check `vla eval` runs before any worker (sim.evaluate.check_policy_spec).
    Only runtime.json edits may be harmless (e.g. a dropped 'fp16', whose default is what was exported)."""
    src, reference = export
    with tempfile.TemporaryDirectory() as tmp:
        path = fresh_copy(src, Path(tmp) / "onnx")
        case, needles = damage_export(path, kind, random.Random(seed))
        verdict = judge(case, lambda: check_export(path), reference, needles)
    assert verdict.kind == "clear" or (kind == "runtime_json" and verdict.kind == "harmless"), verdict


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_refine_demos_that_do_not_fit_the_policy_are_a_clear_error(checkpoint: tuple[Path, dict], seed: int) -> None:
    """Demos of another action or state size, or without a camera the policy reads, are refused
    by `vla refine` before any work, naming the store, the key and both sizes; the run folder is not made."""
    from vla.policy.checkpoint import load_config as checkpoint_config

    ckpt = checkpoint[0]
    with tempfile.TemporaryDirectory() as tmp:
        case, demos, needles = mismatched_demos(Path(tmp), checkpoint_config(ckpt), random.Random(seed))
        verdict = judge(case, refine_check(ckpt, demos, Path(tmp) / "run"), NEVER, needles)
        assert not (Path(tmp) / "run").exists(), case
    assert verdict.kind == "clear", verdict


def vla(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vla.cli", *args], capture_output=True, text=True, timeout=300)


def _flip(f: Path) -> None:
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x08
    f.write_bytes(bytes(data))


def _toggle(arr: zarr.Array) -> None:
    arr[0] = not arr[0]


def _edit_json(f: Path, edit) -> None:
    meta = json.loads(f.read_text())
    edit(meta)
    f.write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("broken")
    store = build_store(root / "store.zarr")
    damage = {
        "flip_meta": lambda p: _flip(p / "meta" / "episode_ends" / "c" / "0"),
        "flip_data": lambda p: _flip(p / "data" / "state" / "c" / "0" / "0"),
        "truncate": lambda p: (p / "data/action/c/1/0").write_bytes((p / "data/action/c/1/0").read_bytes()[:9]),
        "record": lambda p: _edit_json(p / "zarr.json", lambda m: m["attributes"].update(n_steps=7)),
        "meta_edit": lambda p: _toggle(zarr.open_array(p / "meta" / "success", mode="r+")),
        "shape": lambda p: _edit_json(p / "data/state/zarr.json", lambda m: m["shape"].__setitem__(1, 3)),
    }
    out = {"store": store}
    for name, fn in damage.items():
        out[name] = fresh_copy(store, root / f"{name}.zarr")
        fn(out[name])
    (root / "bad.yaml").write_text("out_dir: runs/x\nstages: [demos, stats\n")
    out["yaml"] = root / "bad.yaml"
    return out


@pytest.mark.parametrize("args", [
    ("data", "info", "{flip_meta}"), ("data", "stats", "{flip_data}"), ("data", "verify", "{truncate}"),
    ("data", "info", "{record}"), ("data", "info", "{meta_edit}"), ("data", "stats", "{shape}"),
    ("config", "show", "job", "{yaml}"), ("run", "--preset", "{yaml}"), ("data", "info", "/nonexistent.zarr"),
])
def test_cli_prints_one_error_line(broken: dict[str, Path], args: tuple[str, ...]) -> None:
    argv = [a.format(**{k: str(v) for k, v in broken.items()}) for a in args]
    res = vla(*argv)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-3000:]
    if "{yaml}" in args:
        assert "bad.yaml: line 3" in lines[0]
    debug = vla("--debug", *argv)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_cli_store_info_reports_integrity(broken: dict[str, Path]) -> None:
    res = vla("data", "info", str(broken["store"]))
    assert res.returncode == 0 and "integrity: crc32c" in res.stdout, res.stderr
    res = vla("data", "verify", str(broken["store"]))
    assert res.returncode == 0 and "no damage found" in res.stdout, res.stderr
