"""The main job's simulator stages end to end, tiny: DART demos, pretraining, evaluation, refinement with
its paired gain, and the report a person opens (loaded in a real headless Chromium)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.vla.test_report import CHROMIUM, dump_dom


@pytest.mark.slow
def test_tiny_main_job_writes_a_report_with_its_table_plots_and_videos(tmp_path: Path) -> None:
    out = tmp_path / "job"
    args = [f"out_dir={out}", "stages=[sim_demos,pretrain,export,eval,refine]",
            "demos.episodes=3", "demos.image_size=32", "demos.workers=1", "demos.noise=0.1", "demos.label=clean",
            "demos.drop=0.5", "demos.turn_late=true", "demos.gain=0.7",
            "demos.randomize=camera_shift:10,pose_latency:1",
            "pretrain.train=debug", "pretrain.steps=2", "pretrain.batch_size=4",
            "eval.episodes=2", "eval.workers=1", "eval.onnx_episodes=1", "eval.n_action_steps=8",
            "eval.temporal_ensemble=0.3", "eval.temporal_ensemble_every=2", "eval.runtime=onnx",
            "refine.method=hg_dagger", "refine.iterations=2", "refine.eval_every=2",
            "refine.episodes_per_iteration=2", "refine.eval_episodes=2",
            "refine.train_steps=2", "refine.workers=1", "refine.overrides=[train.batch_size=8,horizon=40]"]
    res = subprocess.run([sys.executable, "-m", "vla.cli", "run", *args], capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "report (open in a browser)" in res.stdout
    summary = json.loads((out / "summary.json").read_text())
    # every evaluation runs the checkpoints' ONNX exports (eval.runtime=onnx); torch is checked on the first of
    # the evaluation's seeds only (eval.onnx_episodes)
    assert re.match(r"\d/2 ", summary["eval"]["onnx success"]) and re.match(r"\d/1 ", summary["eval"]["torch success"])
    assert summary["sim_demos"]["expert noise"] == "0.1 (label: clean)"
    assert summary["sim_demos"]["expert drops"].startswith("50%")
    assert summary["sim_demos"]["expert turns"] == "over the object"
    # domain randomisation in collection; the expert's gain reaches the demos and the person's corrections
    assert summary["sim_demos"]["randomized"] == "camera_shift:10,pose_latency:1: camera_shift, pose_latency"
    collected = json.loads((out / "collect" / "summary.json").read_text())
    assert collected["config"]["expert_gain"] == 0.7 and collected["randomize"]["randomized"] == {
        "camera_shift": 10.0, "pose_latency": 1.0}
    rollouts = json.loads((out / "refine" / "iter_00" / "collect" / "summary.json").read_text())
    assert rollouts["config"]["intervener_args"] == {"expert_gain": 0.7}
    pretrained = summary["pretrain"]["checkpoint"]
    assert rollouts["config"]["runtime"] == "onnx" and rollouts["onnx_export"] == f"{pretrained}/onnx"
    # every evaluation (the eval stage's, the refine stage's rollouts and versions) ran the temporal ensemble
    assert summary["eval"]["execution"] == "temporal ensemble, rate 0.3, a chunk every 2 steps"
    # before and after only (refine.eval_every=2): round 1's policy is trained, not evaluated
    assert not (out / "refine" / "iter_01" / "eval").exists() and (out / "refine" / "iter_01" / "train").is_dir()
    v1 = json.loads((out / "refine" / "iter_02" / "eval" / "summary.json").read_text())
    assert v1["config"]["temporal_ensemble"] == 0.3 and v1["config"]["temporal_ensemble_every"] == 2
    assert v1["onnx_export"] == f"{v1['config']['policy']}/onnx"  # the refined checkpoint's own export
    # the preset's policy reads the cameras and the object poses: the demos, the evaluation and the
    # refine stage's rollouts and versions all ran obs_mode=state
    assert summary["sim_demos"]["observation"] == "agentview, robot0_eye_in_hand; a 22-d state with the object poses"
    evaluated = json.loads((out / "eval_onnx" / "summary.json").read_text())
    assert evaluated["config"]["obs_mode"] == v1["config"]["obs_mode"] == "state"
    # the refine stage's version 0 is the eval stage's evaluation in the same runtime, not a second one
    assert evaluated == json.loads((out / "refine" / "iter_00" / "eval" / "summary.json").read_text())
    from vla.data.store import EpisodeStore

    assert EpisodeStore.open(out / "refine" / "store.zarr").schema.state_dim == 22
    refine = summary["refine"]
    assert refine["gain_lo"] <= refine["gain_mean"] <= refine["gain_hi"] or refine["gain_lo"] != refine["gain_lo"]
    assert re.fullmatch(r"[+-]\d\.\d\d \[.*\] \(\d seeds better, \d worse, of 2\)", refine["gain"])
    assert Path(refine["checkpoint"]).is_dir()
    # the job pretrains with policy.noise_scale=0: the evaluation says so, and the refined checkpoint keeps it
    from vla.policy.checkpoint import load_config

    assert summary["eval"]["noise_scale"] == 0.0 and load_config(refine["checkpoint"]).noise_scale == 0.0
    page = (out / "report.html").read_text()
    # the table has a row per stage, and the videos of the demos, the evaluation and the refined policy
    for stage in ("sim_demos", "pretrain", "eval", "refine"):
        assert f'<td class="stage">{stage}</td>' in page
    videos = re.findall(r'<video src="([^"]+)"', page)
    assert len(videos) == 1 + 2 + 2 and all((out / v).is_file() for v in videos)
    assert "curves.png" in page and "summary.png" in page
    if CHROMIUM is not None:
        status = re.search(r'id="media-status"[^>]*>([^<]*)<', dump_dom(out / "report.html", tmp_path))
        assert status is not None and status.group(1) == "7 ready, 0 failed, 7 in all"

    # the same job extended by one stage (overwrite=false): imagination refinement of its pretrained
    # policy, on its evaluation's seeds; the report keeps the earlier stages' media
    args = [f"out_dir={out}", "overwrite=false", "stages=[imagine]", "imagine.episodes_per_iteration=2",
            "imagine.eval_episodes=2", "imagine.train_steps=2", "imagine.workers=1", "imagine.wm_steps=4",
            "imagine.starts=4", "imagine.samples=3",
            "imagine.wm_overrides=[model.image_size=32,model.latent_dim=32,model.hidden=32,model.ensemble=2,"
            "model.horizon=2,train.batch_size=8]",
            "imagine.overrides=[train.batch_size=8,horizon=40,method_args.min_std=0]"]
    res = subprocess.run([sys.executable, "-m", "vla.cli", "run", *args], capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == ["sim_demos", "pretrain", "export", "eval", "refine", "imagine"]
    imagine = summary["imagine"]
    assert imagine["method"] == "imagination" and imagine["env episodes"] == 2
    assert re.fullmatch(r"[+-]\d\.\d\d \[.*\] \(\d seeds better, \d worse, of 2\)", imagine["gain"])
    assert imagine["imagined"].startswith("4 real starts x 3 chunks")
    why = re.fullmatch(r"\d+ of 12 chunks: those scored above the chunk the policy deploys from their start; "
                       r"\d+ imagined successes the world model's ensemble disagreed on counted as failures; \d of 4 "
                       r"starts gave "
                       r"none: their chunks' scores spread less than min_std \(median spread (\S+)\)",
                       imagine["supervised"])
    # the checkpoint deploys noise-free, its K samples are drawn with noise: they differ, so do their scores
    assert why is not None and float(why.group(1)) > 0
    # version 0 is the eval stage's own evaluation (same seeds and settings), not a second one
    v0 = json.loads((out / "imagine" / "iter_00" / "eval" / "summary.json").read_text())
    assert v0 == json.loads((out / "eval_onnx" / "summary.json").read_text())
    page = (out / "report.html").read_text()
    assert '<td class="stage">imagine</td>' in page and '<td class="stage">refine</td>' in page
    videos = re.findall(r'<video src="([^"]+)"', page)
    assert len(videos) == 1 + 2 + 2 + 2 and all((out / v).is_file() for v in videos)
