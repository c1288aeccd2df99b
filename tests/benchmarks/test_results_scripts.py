"""The scripts that turn other outputs into results files by code: fresh_env_result (fresh_env.sh's times),
hardening_report (the two hardening suites' sums), ensemble_sweep's settings, robustness_training,
ensemble_latency, bench_robustness's page, recipe_change's pooled blocks and bench_imagination's pairing, and
bench_camera_refine's and bench_vision's reading of records extended by more trainings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.benchmarks.helpers import load_script


def test_fresh_env_figures_come_from_times_and_the_pytest_line(tmp_path: Path) -> None:
    fe = load_script("fresh_env_result")
    (tmp_path / "times.txt").write_text("make_install rc=0 93 s\nmake_run rc=0 687 s\nmake_test rc=1 497 s\n")
    (tmp_path / "make_test.log").write_text("collected 9\n.....\n"
                                            "===== 2 failed, 521 passed, 3 skipped in 497.12s (0:08:17) =====\n")
    f = fe.figures(tmp_path)
    assert f["make_run_total_s"] == 780 and f["make_test_rc"] == 1
    assert f["make_test_result"] == "2 failed, 521 passed, 3 skipped"


def test_fresh_env_names_an_unreadable_times_line(tmp_path: Path) -> None:
    fe = load_script("fresh_env_result")
    (tmp_path / "times.txt").write_text("make_install took long\n")
    with pytest.raises(SystemExit, match=r"times\.txt: unreadable line 'make_install took long'"):
        fe.figures(tmp_path)


def test_hardening_sums_the_two_suites() -> None:
    hr = load_script("hardening_report")
    store = {"hostile_cases": 367, "clear_errors": 545, "harmless": 15, "tracebacks": 0, "silent": 0,
             "store_kills": 60, "committed_lost": 0}
    ros = {"hostile_cases": 667, "clear_errors": 603, "accepted_valid_or_bounded": 64, "bad_commands": 0,
           "permanent_holds": 1, "control_ticks": 90000, "soak_minutes": 30.0}
    m = hr.merge(store, ros)
    assert (m["hostile_cases"], m["clear_errors"], m["accepted_valid_or_harmless"]) == (1034, 1148, 79)
    assert m["permanent_holds"] == 1 and m["soak_control_ticks"] == 90000 and m["store_kills"] == 60
    # a soak without the unseen-instruction scenario carries no such figures (and no None in their place)
    assert "first_instruction_max_gap_ms" not in m and "inference_watchdog_ms" not in m


def test_hardening_carries_the_unseen_instruction_gap_and_the_watchdog() -> None:
    hr = load_script("hardening_report")
    ros = {"hostile_cases": 667, "clear_errors": 603, "first_instruction_max_gap_ms": 850.5,
           "inference_watchdog_ms": 2000.0, "first_instruction_gaps_ms": [850.5, 120.0]}
    m = hr.merge({"hostile_cases": 10}, ros)
    assert m["first_instruction_max_gap_ms"] == 850.5 and m["inference_watchdog_ms"] == 2000.0
    assert m["hostile_cases"] == 677 and "first_instruction_gaps_ms" not in m
    m = hr.merge({}, {**ros, "first_instruction_max_gap_ms": None})  # measured nothing: not carried
    assert "first_instruction_max_gap_ms" not in m and m["inference_watchdog_ms"] == 2000.0


def test_ensemble_sweep_pairs_every_setting_against_four_steps() -> None:
    es = load_script("ensemble_sweep")
    s = es.settings((-0.01, 0.3), (1, 2), (4, 8))
    assert s["steps4"] == {"temporal_ensemble": None, "temporal_ensemble_every": 1, "n_action_steps": 4}
    assert s["rate0.3_every2"] == {"temporal_ensemble": 0.3, "temporal_ensemble_every": 2}
    assert set(s) == {"steps4", "steps8", "rate-0.01_every2", "rate0.3_every2", "rate0.3_every1"}


def test_robustness_training_pairs_a_variant_with_its_base_by_training_and_eval_seed(tmp_path: Path) -> None:
    import json

    rt = load_script("robustness_training")
    # the base trained on the GPU (results.json), the variant here (summary.json per condition)
    gpu = {"runs": {"s_base_s1": {"none": {"success_rate": 0.5, "seeds": {"10": 1, "11": 0}}, "train_tail": ""},
                    "s_base_s2": {"none": {"success_rate": 1.0, "seeds": {"10": 1, "11": 1}}}}}
    for seed, outcomes in (("1", [1, 1]), ("2", [0, 1])):
        d = tmp_path / "s_g07" / f"s{seed}" / "none"
        d.mkdir(parents=True)
        d.joinpath("summary.json").write_text(json.dumps({"episodes_detail": [
            {"seed": 10, "success": bool(outcomes[0])}, {"seed": 11, "success": bool(outcomes[1])}]}))
    figures = rt.summarise(rt.collect(tmp_path, gpu))
    row = figures["s_g07"]["clean"]
    assert row["per_training"] == {"1": 1.0, "2": 0.5} and row["mean"] == 0.75
    # pairs (1,10) 1-1, (1,11) 1-0, (2,10) 0-1, (2,11) 1-1: differences 0, +1, -1, 0
    assert row["minus_base"]["mean"] == 0.0 and row["minus_base_trainings"] == ["1", "2"]
    # over trainings: training 1 gains +0.5, training 2 loses 0.5; the interval is the trainings' spread
    over = row["minus_base_over_trainings"]
    assert over["per_training"] == [0.5, -0.5] and over["mean"] == 0.0 and over["lo"] < -0.5 < 0.5 < over["hi"]
    assert "minus_base" not in figures["s_base"]["clean"]


def test_ensemble_latency_pairs_each_rate_with_the_base_rate_by_training_and_seed(tmp_path: Path) -> None:
    import json

    el = load_script("ensemble_latency")
    runs = {("-0.01", "0"): [1, 1, 0], ("0.3", "0"): [1, 0, 0], ("-0.01", "1"): [1, 1, 1], ("0.3", "1"): [0, 0, 1]}
    for (rate, training), won in runs.items():
        d = tmp_path / f"te{rate}" / f"s{training}" / "action_latency"
        d.mkdir(parents=True)
        d.joinpath("summary.json").write_text(json.dumps({"episodes_detail": [
            {"seed": 100 + i, "success": bool(w)} for i, w in enumerate(won)]}))
    # training 2 ran only the new rate: it has no pair and is left out, not compared with nothing
    (tmp_path / "te-0.01" / "s2" / "action_latency").mkdir(parents=True)
    fig = el.figures(tmp_path, "-0.01", "0.3")
    block = fig["action_latency:1"]
    assert set(block["per_training"]) == {"0", "1"} and "clean" not in fig
    assert block["per_training"]["0"]["minus_base"]["mean"] == pytest.approx(1 / 3)
    assert block["per_training"]["1"]["minus_base"]["better"] == 2
    over = block["over_trainings"]
    assert over["trainings"] == 2 and over["mean"] == pytest.approx((1 / 3 + 2 / 3) / 2)
    assert over["lo"] < over["mean"] < over["hi"]


def test_robustness_page_shows_the_column_against_another_block_only_where_one_was_given() -> None:
    br = load_script("bench_robustness")
    diff = {"mean": 0.285, "lo": 0.198, "hi": 0.372, "seeds": 200, "better": 75, "worse": 18}
    block = {"against": {"block": "job", "dir": "runs/x"}, "realistic_minus_against": diff}
    assert "+0.285 [+0.198, +0.372] (75 / 18)" in br.against_cell(block, "realistic")
    assert br.against_cell(block, "clean") == " |"  # a run the other block does not have: an empty cell
    assert br.against_cell({"realistic_minus_against": diff}, "realistic") == ""


def test_robustness_page_gives_the_estimators_error_of_each_run_and_of_its_failures() -> None:
    br = load_script("bench_robustness")
    line = br.pose_error_line({"clean": {"cube": {"median": 7.21, "failure_median": 27.8},
                                         "zone": {"median": 5.5, "failure_median": None}},
                               "realistic": {"cube": {"median": 11.0, "failure_median": 33.0}}})
    assert "(cube / zone;" in line and "clean 7.2 / 5.5 (failed 27.8 / -)" in line
    assert "realistic 11.0 / - (failed 33.0 / -)" in line  # an object a run has no figure for: a dash


def test_a_recipe_change_pools_every_condition_all_its_folders_ran_and_the_page_shows_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    rc = load_script("recipe_change")

    def run(folder: Path, cond: str, wins: list[bool]) -> None:
        (folder / cond).mkdir(parents=True)
        detail = [{"seed": 1000 + i, "success": w} for i, w in enumerate(wins)]
        (folder / cond / "summary.json").write_text(json.dumps({"episodes_detail": detail}))

    pairs = [(tmp_path / "b0", tmp_path / "n0"), (tmp_path / "b1", tmp_path / "n1")]
    for base, new in pairs:
        run(base, "clean", [True, True, False, False])
        run(new, "clean", [True, True, True, False])
        run(base, "realistic", [False, False, False, False])
        run(new, "realistic", [True, False, True, False])
    run(tmp_path / "n0", "action_noise", [True] * 4)  # not run by every folder: left out
    block = rc.change_block(pairs, "the change")
    assert block["trainings"] == 2 and "action_noise" not in block
    assert block["clean"]["per_training"] == [{"base": 0.5, "new": 0.75}] * 2
    d = block["realistic"]["pooled_minus_base"]
    assert d["mean"] == 0.5 and d["pairs"] == 8 and (d["better"], d["worse"]) == (4, 0)
    run(tmp_path / "b1", "lighting", [True])  # another set of seeds than its pair's: refused, not half-paired
    run(tmp_path / "n1", "lighting", [True, True])
    for f in ("b0", "n0"):
        run(tmp_path / f, "lighting", [True, True])
    with pytest.raises(SystemExit, match="not the same seeds"):
        rc.change_block(pairs, "the change")

    br = load_script("bench_robustness")
    monkeypatch.setattr(br, "RESULTS", tmp_path)  # the page goes beside the test's own files
    br.write_page({"ch": block})
    page = (tmp_path / "robustness.md").read_text()
    assert "## ch: the change" in page and "| realistic | 0.000 -> 0.500, 0.000 -> 0.500 | +0.500" in page
    assert "of the same training seed" in page

    shared = rc.change_block([(tmp_path / "b0", tmp_path / "n0"), (tmp_path / "b0", tmp_path / "n1")], "shared")
    br.write_page({"sh": shared})  # one base against several trainings: the page says it counts once per pair
    assert "the one base run (" + str(tmp_path / "b0") + "), counted once per pair" in (
        tmp_path / "robustness.md").read_text()
    with pytest.raises(SystemExit, match=r"n9/clean: no summary.json \(that evaluation has not run\)"):
        rc.pooled([(str(tmp_path / "b0" / "clean"), str(tmp_path / "n9" / "clean"))])


def test_a_robustness_run_stored_at_another_ensemble_rate_is_not_read_back_as_this_one() -> None:
    br = load_script("bench_robustness")
    stored = {"config": {"perturb": "action_latency:1", "temporal_ensemble": 0.3}, "episodes": 200}
    assert br.same_run(stored, "action_latency:1", 200) and br.same_run(stored, "action_latency:1", 200, 0.3)
    assert not br.same_run(stored, "action_latency:1", 200, -0.01)
    assert not br.same_run(stored, "none", 200) and not br.same_run(stored, "action_latency:1", 100)
    # a run stored before `runtime` existed ran torch: not the ONNX run asked for, and the ONNX run is read back
    assert not br.same_run(stored, "action_latency:1", 200, 0.3, runtime="onnx")
    onnx = {**stored, "config": {**stored["config"], "runtime": "onnx"}}
    assert br.same_run(onnx, "action_latency:1", 200, 0.3, runtime="onnx")
    assert not br.same_run(onnx, "action_latency:1", 200)
    # a run at another query stride is not the one asked for; without a stride asked for, any stride is read back
    every1 = {**onnx, "config": {**onnx["config"], "temporal_ensemble_every": 1}}
    assert br.same_run(every1, "action_latency:1", 200, 0.3, runtime="onnx", every=1)
    assert not br.same_run(every1, "action_latency:1", 200, 0.3, runtime="onnx", every=2)
    assert br.same_run(every1, "action_latency:1", 200, 0.3, runtime="onnx")


def test_wm_chunks_carries_each_truth_sets_continuations_reliability_and_kind_prior(tmp_path: Path) -> None:
    import json

    wc = load_script("bench_wm_chunks")
    for name, m in (("one", 1), ("four", 4)):
        (tmp_path / name).mkdir()
        config = {"policy": "CK", "noisy": 5, "perturbed": 2, "continuations": m,
                  "continuation_noise": 0.0 if m == 1 else 1.0}
        (tmp_path / name / "meta.json").write_text(json.dumps({"config": config}))
    nan = float("nan")
    reports = {str(tmp_path / "one"): {"task": "pick_place", "seed_range": "report", "chunk_spearman": 0.4,
                                       "truth_reliability": {"continuations": 1, "split_half_spearman": nan,
                                                             "spearman_brown": nan, "one_rollout_ceiling": nan}},
               str(tmp_path / "four"): {"task": "pick_place", "seed_range": "report", "chunk_spearman": 0.5,
                                        "truth_reliability": {"continuations": 4, "split_half_spearman": 0.61234,
                                                              "spearman_brown": 0.76, "one_rollout_ceiling": 0.4},
                                        "policy_samples": {"chunk_spearman": 0.1, "states_that_order": 30},
                                        "kind_prior": {"chunk_spearman": 0.57, "chunk_auroc_best_vs_worst": 0.9,
                                                       "policy_samples": {"chunk_spearman": 0.2}}}}
    sets = wc.sets_of(reports)
    one, four = sets[str(tmp_path / "one")], sets[str(tmp_path / "four")]
    assert one["continuations"] == 1 and one["split_half_spearman"] is None and one["candidates"] == 8
    assert four["continuations"] == 4 and four["continuation_noise"] == 1.0 and four["split_half_spearman"] == 0.6123
    assert four["policy_samples_chunk_spearman"] == 0.1 and four["policy_samples_states_that_order"] == 30
    assert four["kind_prior_chunk_spearman"] == 0.57 and four["kind_prior_policy_samples_chunk_spearman"] == 0.2
    assert one["kind_prior_chunk_spearman"] is None  # an evaluation without candidate kinds
    # evaluations written before the reliability existed still read
    old = {str(tmp_path / "one"): {"task": "pick_place", "seed_range": "tune", "chunk_spearman": 0.1}}
    assert wc.sets_of(old)[str(tmp_path / "one")]["spearman_brown"] is None


def test_a_jobs_full_evaluation_is_the_one_in_its_runtime(tmp_path: Path) -> None:
    """A job's eval stage runs all its seeds in eval.runtime and only a check in the other: the scripts that
    re-run or pair with it read eval_<runtime> (eval_torch for a job from before the option, or no job.json)."""
    import json

    harness = load_script("harness")
    assert harness.job_eval(tmp_path) == tmp_path / "eval_torch"
    (tmp_path / "job.json").write_text(json.dumps({"eval": {"episodes": 200}}))
    assert harness.job_eval(tmp_path) == tmp_path / "eval_torch"
    (tmp_path / "job.json").write_text(json.dumps({"eval": {"episodes": 200, "runtime": "onnx"}}))
    assert harness.job_eval(tmp_path) == tmp_path / "eval_onnx"


def test_robustness_page_says_which_blocks_ran_with_the_stale_distractor_frame() -> None:
    br = load_script("bench_robustness")
    drew = {"realistic_perturb": "action_latency:1,distractor:0.2", "distractor_success": 0.9}
    assert "before the fix: realistic 0.710, distractor 0.960" in br.stale_distractor_line("job_s19", drew)
    assert "**Measured before the stale-distractor fix**" in br.stale_distractor_line("job_s17", drew)
    # a block whose runs never drew a distractor (the preset before it joined) says nothing
    assert br.stale_distractor_line("job_gain15", {"realistic_perturb": "action_latency:1"}) == ""
    assert br.stale_distractor_line("camera_only", {**drew, "after_stale_distractor_fix": True}) == ""


def test_wm_select_gain_pairs_the_selection_with_the_noise_free_chunk_seed_by_seed(tmp_path: Path) -> None:
    import json

    ws = load_script("bench_wm_select")

    def run(name: str, wins: list[bool], first: int = 1000) -> Path:
        (tmp_path / name).mkdir()
        detail = [{"seed": first + i, "success": w} for i, w in enumerate(wins)]
        (tmp_path / name / "summary.json").write_text(json.dumps({"episodes_detail": detail}))
        return tmp_path / name

    base, sel = run("base", [True, False, False, True]), run("select", [True, True, False, False])
    g = ws.gain(base, sel)
    assert (g["mean"], g["seeds"], g["better"], g["worse"]) == (0.0, 4, 1, 1)
    assert g["base_success"] == g["select_success"] == 0.5 and g["lo"] < 0 < g["hi"]
    with pytest.raises(SystemExit, match="not the same seeds"):
        ws.gain(base, run("other", [True] * 4, first=2000))
    with pytest.raises(SystemExit, match=r"missing: no summary.json \(that evaluation has not run\)"):
        ws.gain(base, tmp_path / "missing")


def test_imagination_pairs_each_method_with_both_controls_by_seed() -> None:
    bi = load_script("bench_imagination")
    final = {"imagination": {20: 0.60, 21: 0.50, 22: 0.70}, "control": {20: 0.50, 21: 0.50, 22: 0.60},
             "demos_only": {20: 0.55, 21: 0.40, 22: 0.80}, "imagination_c2": {20: 0.40, 22: 0.50}}
    res, lines = bi.paired_vs_controls(final)
    # the shipped default has the bare keys; the differences are per seed, not of the means
    assert res["paired_gain_vs_control_per_seed"] == [0.1, 0.0, 0.1]
    assert abs(res["paired_gain_vs_control"] - 0.2 / 3) < 1e-9
    assert res["paired_gain_vs_demos_only_per_seed"] == [0.05, 0.1, -0.1]
    assert res["paired_gain_vs_control_low"] < res["paired_gain_vs_control"] < res["paired_gain_vs_control_high"]
    # a variant is paired on the seeds it shares with each control, under its own name
    assert res["imagination_c2_paired_seeds"] == [20, 22]
    assert res["imagination_c2_paired_gain_vs_control_per_seed"] == [-0.1, -0.1]
    # the controls are not paired with each other
    assert not any(k.startswith(("control_", "demos_only_")) for k in res)
    assert sum("paired by seed" in line for line in lines) == 4


def test_camera_refine_changes_the_jobs_protocol_only_where_told(tmp_path: Path) -> None:
    cr = load_script("bench_camera_refine")
    (tmp_path / "refine").mkdir()
    (tmp_path / "refine" / "config.json").write_text(
        '{"iterations": 1, "method": "hg_dagger", "train": {"steps": 250, "ema_decay": 0.999}}')
    base = cr.protocol(tmp_path, [])
    assert base == {"iterations": 1, "method": "hg_dagger", "train": {"steps": 250, "ema_decay": 0.999}}
    changed = cr.protocol(tmp_path, ["iterations=2", "train.steps=500"])
    assert changed["iterations"] == 2 and changed["train"] == {"steps": 500, "ema_decay": 0.999}
    for bad, why in (("train.stepz=5", "unknown key 'train.stepz'"), ("iterations", "not KEY=VALUE"),
                     ("method.x=1", "'method.x' is not a block")):
        with pytest.raises(SystemExit, match=why):
            cr.protocol(tmp_path, [bad])


def test_camera_refine_counts_the_demonstrations_its_base_and_control_were_trained_on(tmp_path: Path) -> None:
    from vla.data.schema import Source
    from vla.data.store import EpisodeStore
    from vla.data.synthetic import default_schema, synthetic_episode

    cr = load_script("bench_camera_refine")
    store = EpisodeStore.create(tmp_path / "d.zarr", default_schema(image_size=8))
    episodes = [synthetic_episode(store.schema, seed, length=5) for seed in range(6)]
    for e in episodes:
        store.append_episode(e)
    demos = sum(e.source == Source.DEMO for e in episodes)
    assert 0 < demos < len(episodes)  # the synthetic sources mix demos with other episodes
    assert cr.demo_episodes(tmp_path / "d.zarr") == demos


def test_camera_refine_pools_an_earlier_records_other_trainings_marked_and_never_its_own_twice() -> None:
    cr = load_script("bench_camera_refine")

    def row(seed: int, diff: float) -> dict:
        return {"training_seed": seed, "pretrained": 0.5, "refined": 0.5 + diff, "control_success": 0.5,
                "refined_minus_pretrained": {"mean": diff}, "refined_minus_control": {"mean": diff}}

    record = {"_name": "first", "hg_dagger": {"trainings": [row(0, 0.1), row(1, 0.2), row(2, 0.3)]}}
    mine = [row(2, -0.3), row(3, 0.4)]  # training 2 run again here: this run's row wins
    every = cr.pooled(mine, record, "hg_dagger")
    assert [r["training_seed"] for r in every] == [0, 1, 2, 3]
    assert [r.get("pooled_from") for r in every] == ["first", "first", None, None]
    assert cr.over(every)["per_training"] == [0.1, 0.2, -0.3, 0.4]
    assert cr.pooled(mine, record, "habc") == mine and cr.pooled(mine, None, "hg_dagger") == mine


def test_vision_reads_an_extended_camera_refine_record_with_the_earlier_trainings_and_blocks(tmp_path: Path) -> None:
    vision = load_script("bench_vision")

    def row(seed: int, refined: float) -> dict:
        return {"training_seed": seed, "refined": refined, "episodes": 200, "refine": f"t{seed}"}

    gain = {"mean": 0.1, "lo": 0.01, "hi": 0.2, "trainings": 3}
    (tmp_path / "first.json").write_text(json.dumps({
        "hg_dagger": {"trainings": [row(0, 0.8), row(1, 0.6), row(2, 0.7)], "demo_episodes": 15},
        "camera_only_refine_gain_vs_control": gain, "camera_only_rac_gain_vs_control": gain}))
    (tmp_path / "more.json").write_text(json.dumps({
        "hg_dagger": {"trainings": [row(3, 0.9), row(4, 0.5)], "demo_episodes": 15, "pooled_with": "first"},
        "camera_only_refine_gain_vs_control": {**gain, "trainings": 5}}))
    f = vision.refine_block(tmp_path, "more")
    assert f["camera_only_refine_gain_vs_control"]["trainings"] == 5
    assert f["camera_only_refine_gain_vs_control"]["source"].startswith("more.json")
    assert f["camera_only_rac_gain_vs_control"]["source"].startswith("first.json")  # not run again: the earlier
    assert f["camera_only_habc_gain_vs_control"]["not_run"]
    assert f["camera_only_success"] == 0.8 and f["camera_only"]["training_seed"] == 0  # training 0, not 3
    assert f["camera_only"]["per_training"] == [0.8, 0.6, 0.7, 0.9, 0.5]
    assert vision.refine_block(tmp_path, "absent") == {}


def test_vision_takes_camera_only_success_from_the_deployed_policy_on_its_estimator_and_refuses_other_runs(
        tmp_path: Path) -> None:
    vision = load_script("bench_vision")
    job, ev = tmp_path / "job", tmp_path / "eval"
    job.mkdir()
    ev.mkdir()
    ckpt = job / "refine" / "iter_01" / "ckpt"
    (job / "summary.json").write_text(json.dumps({"refine": {"checkpoint": str(ckpt)}}))
    (job / "job.json").write_text(json.dumps({"demos": {"episodes": 40},
                                              "refine": {"method": "hg_dagger", "iterations": 1}}))

    def evaluation(**changes: object) -> None:
        config = {"policy": str(ckpt), "poses": str(job / "perception" / "estimator"), "seed_range": "report",
                  "seed_offset": 400_000}
        s = {"success_rate": 0.9, "successes": 180, "episodes": 200, "config": config}
        for k, v in changes.items():
            (s if k == "episodes" else config)[k] = v
        (ev / "summary.json").write_text(json.dumps(s))

    evaluation()
    f = vision.camera_policy_block(ev, job, "why")
    assert f["camera_only_success"] == 0.9 and f["camera_only_target_met"]
    assert f["camera_only"]["demos"] == 40 and f["camera_only"]["seed_offset"] == 400_000
    assert f["camera_only"]["decided"] == "why" and len(f["camera_only"]["wilson95"]) == 2
    for change, says in (({"poses": ""}, "not the job's estimator"), ({"policy": str(tmp_path / "other")},
                         "not the job's refined policy"), ({"seed_range": "tune"}, "not report"),
                         ({"episodes": 100}, "under 200")):
        evaluation(**change)
        with pytest.raises(ValueError, match=says):
            vision.camera_policy_block(ev, job, "why")


def test_the_luck_check_replays_a_supervised_chunk_padded_with_its_last_action() -> None:
    luck = load_script("imagination_luck")
    short = np.arange(6, dtype=np.float32).reshape(3, 2)  # an imagined episode that succeeded after 3 steps
    out = luck.FixedChunk(short, 5).sample_chunk([{}, {}])
    assert out.shape == (2, 5, 2) and (out[:, :3] == short).all() and (out[:, 3:] == short[-1]).all()
    assert luck.FixedChunk(np.zeros((9, 2), np.float32), 8).chunk.shape == (8, 2)
