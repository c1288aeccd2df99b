"""Training that expects a real arm's errors (issue 61, item 3): which demos make the main job's pretrained
policy and the camera-only policy survive the `realistic` preset, read on 200 `tune` seeds (the job's
execution) before anything is run on the `report` range.

  python benchmarks/robustness_training.py --runs runs/rob61 --gpu runs/rob61/results.json --delay runs/delay61

Its inputs: `tools/device/job_robust.py`'s results.json (variants trained side by side on a lent GPU, each
evaluated there) and the evaluations `runs/rob61/drive*.sh` ran here (`<variant>/s<seed>/<condition>/` for the
state policies, `<variant>/<condition>/` for the camera ones). Every state variant is the job's pretraining
recipe (40 demos, 3,000 steps, tiny, batch 32, lr 1e-3, noise scale 0) and differs only in its demos:
`randomize=` (vla.perturb: each demo's severities drawn from [0, the spec's]) and the expert's gain
(`demos.gain`). Writes benchmarks/results/robustness_training.json (per variant and condition: each training's
success, their mean, and the paired difference against the base of the same training seed where one exists)
and robustness_training.md. Variants with no evaluations under --runs keep their stored figures. Each
variant's recipe and base: `robustness_variants.py`; the findings under the page's table: `robustness_findings.py`.

The t_* variants (re-read 2026-12-05, after the rendering defect; 3 trainings each, training seeds 0-2):

  vla run out_dir=runs/s9/g07_sN "stages=[sim_demos,stats,pretrain]" demos.gain=0.7 demos.randomize=none \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=N"]'
      (t_g07r: demos.randomize=action_latency:1,pose_latency:2,camera_shift:10,camera_rot:1;
       t_g07l: demos.randomize=action_latency:1 only;
       t_g07pc: demos.randomize=pose_latency:2,camera_shift:10,camera_rot:1 (the main job's preset since
       2026-12-05), runs/s10/g07pc_sN;
       t_g07pcd: t_g07pc's + demos.noise=0.05 demos.label=clean (DART), runs/s10/g07pcd_sN, paired with t_g07pc;
       both also under perturb=action_noise:0.02;
       t_base: demos.gain=1.5 demos.randomize=none, i.e. runs/main65 and runs/s7/pre_s1, pre_s2, made when
       that was the preset)
  vla eval CKPT episodes=200 seed_range=tune temporal_ensemble=0.3 temporal_ensemble_every=2 n_action_steps=4 \
      videos=0 perturb=none|action_latency:1|realistic out_dir=runs/s9/rob/<variant>/sN/<none|action_latency|realistic>
  python benchmarks/robustness_training.py --runs runs/s9/rob

The r_* variants (the refine stage on t_g07pc's pretrainings, N = 0-2; runs/s11/q_rr.sh): version 0 is the
t_g07pc evaluation above, version 2 evaluated clean by the loop and as above under each condition:

  vla refine hg-dagger --ckpt runs/s10/g07pc_sN/train/checkpoints/step_00003000 --demos runs/s10/g07pc_sN/demos.zarr \
      --out runs/s11/rr/clean_sN obs_mode=state image_size=84 iterations=2 episodes_per_iteration=100 \
      eval_episodes=200 eval_every=2 eval_seed_range=tune n_action_steps=4 temporal_ensemble=0.3 \
      temporal_ensemble_every=2 videos=0 "intervener_args={expert_gain: 0.7}" train.steps=500 \
      train.ckpt_every=500 train.ema_decay=0.999 train.ema_warmup=false
      (r_rand: --out runs/s11/rr/rand_sN, the same + \
       collect_randomize=action_latency:1,action_noise:0.02,action_gain:0.1,rate_jitter:0.05;
       r_ctrl: --out runs/s11/rr/ctrl_sN, the same + "method_args.group_shares={demo: 1.0}", runs/s11/q_ctrl.sh)

The v_* and x_* variants (2026-12-05, runs/s12; runs/s12/q_pre.sh, q_ref.sh, q_exec*.sh): t_g07pc's pretraining
made again (v_pre: the t_g07pc `vla run` above with out_dir=runs/s12/g07pc_sN), refined as r_clean (v_clean:
--out runs/s12/rr/clean_sN) and with its rollouts under the demos' own randomisation (v_sens: the same +
collect_randomize=pose_latency:2,camera_shift:10,camera_rot:1); the x_* variants are v_pre's policies evaluated
as above but for temporal_ensemble=R temporal_ensemble_every=K. Each variant's folder under one --runs folder
(runs/s12/robv holds links to runs/s12/rob/<t_g07pc|r_clean|r_sens|x_*>):

  python benchmarks/robustness_training.py --runs runs/s12/robv

The c_* variants (the camera-only recipe on the default preset's demos and on the earlier ones; runs/s13/cam/q_cam*.sh):

  vla run out_dir=runs/s13/cam/i_g07pc_sN "stages=[sim_demos,stats,pretrain]" demos.obs_mode=image \
      demos.episodes=400 pretrain.steps=7000 \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=N"]'
      (c_base: out_dir=runs/s13/cam/i_base_sN, the same + demos.gain=1.5 demos.randomize=none)
  vla eval CKPT (as above) perturb=none|camera_shift:10|camera_rot:1|action_latency:1|realistic
      (c_g07pc_te: the same + temporal_ensemble=-0.01)
  python benchmarks/robustness_training.py --runs runs/s13/robv   (links to the evaluations, as runs/s12/robv)

The h2* variants (two observation steps; training seed 0 only, paired with t_g07pc's training 0):

  vla run out_dir=runs/s14/h2 "stages=[sim_demos,stats,pretrain]" \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=0","policy.n_obs_steps=2"]'
      (h2l: the same + demos.randomize=action_latency:1,pose_latency:2,camera_shift:10,camera_rot:1)
  vla eval runs/s14/h2/train/checkpoints/step_00003000 (as above) perturb=none|action_latency:1
  python benchmarks/robustness_training.py --runs runs/s14/robv --only h2,h2l   (h2*/s0 and t_g07pc linked)

The t_g07pcf variant (the expert's drift near the grasp; paired with v_pre, the same training seeds;
runs/s15/q_drift.sh):

  vla run out_dir=runs/s15/g07pcf_sN "stages=[sim_demos,stats,pretrain]" demos.drift=0.5 demos.label=clean \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=N"]'
  vla eval runs/s15/g07pcf_sN/train/checkpoints/step_00003000 (as above) perturb=none|action_latency:1|realistic
  python benchmarks/robustness_training.py --runs runs/s15/robv --only t_g07pcf   (t_g07pcf and v_pre linked)

The t_g07pcr variant (the expert's rotation noised, DART on the tilt; paired with v_pre; runs/s16/q_rot.sh,
q_rot1.sh; stopped after two trainings, see the notes):

  vla run out_dir=runs/s16/g07pcr_sN "stages=[sim_demos,stats,pretrain]" demos.rot_noise=0.02 demos.label=clean \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=N"]'
  vla eval runs/s16/g07pcr_sN/train/checkpoints/step_00003000 (as above) perturb=none|action_noise:0.02
  python benchmarks/robustness_training.py --runs runs/s16/robv --only t_g07pcr   (t_g07pcr and v_pre linked)
  python experiments/action_noise_dims.py CKPT --out DIR   (where the command noise hurts: the diagnosis)

The t_g04pc variant (a gentler expert still: gain 0.4 instead of 0.7, everything else the default's; paired with
v_pre; runs/s17/q_g04.sh):

  vla run out_dir=runs/s17/g04pc_sN "stages=[sim_demos,stats,pretrain]" demos.gain=0.4 \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=N"]'
  vla eval runs/s17/g04pc_sN/train/checkpoints/step_00003000 (as above) \
      perturb=none|action_latency:1|action_noise:0.02|realistic
  python benchmarks/robustness_training.py --runs runs/s17/robv --only t_g04pc   (t_g04pc and v_pre linked)

The c_g04pc variant (the camera-only recipe on the gain-0.4 demos; training seed 0; runs/s17/q_cam.sh):

  vla run out_dir=runs/s17/cam/i_g04pc_s0 "stages=[sim_demos,stats,pretrain]" demos.obs_mode=image \
      demos.episodes=400 pretrain.steps=7000 demos.gain=0.4 \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=0"]'
  vla eval runs/s17/cam/i_g04pc_s0/train/checkpoints/step_00007000 (as above) perturb=none|action_latency:1|realistic
  python benchmarks/robustness_training.py --runs runs/s17/robv --only c_g04pc   (c_g07pc linked)

The n_* variants (where the command noise gets in on the gain-0.4 job; one policy, runs/s17/job_g04's refined, 200
tune seeds, perturb=none|action_noise:0.02; runs/s17/q_diag.sh, q_pn.sh; folders linked under runs/s17/robn):

  vla eval CKPT (as above) perturb=...                       (n_gt: the simulator's poses)
  vla eval CKPT (as above) perturb=... poses=runs/s17/job_g04/perception/estimator          (n_est)
  vla run out_dir=runs/s17/job_g04_pn "stages=[perception]" overwrite=false perception.policy_episodes=0 \
      perception.randomize=<the job's>,action_noise:0.02   (its summary.json and job.json copied from job_g04)
  vla eval CKPT (as above) perturb=... poses=runs/s17/job_g04_pn/perception/estimator       (n_estpn)
  python benchmarks/robustness_training.py --runs runs/s17/robn --only n_gt,n_est,n_estpn

The t_s2000 and n_estpn500 variants (the main job's budget; runs/s18/q_t.sh, q_t2.sh):

  vla run out_dir=runs/s18/pre_s2000_N "stages=[sim_demos,stats,pretrain]" demos.gain=0.4 pretrain.steps=2000 \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=N"]'       (N = 0, 1, 2)
  vla eval runs/s18/pre_s2000_N/train/checkpoints/step_00002000 $EV perturb=none|action_latency:1
  python benchmarks/robustness_training.py --runs runs/s18/robv --only t_s2000        (t_g04pc linked)
  vla run out_dir=runs/s18/job_g04_pn500 "stages=[perception]" overwrite=false perception.policy_episodes=0 \
      perception.steps=500 perception.randomize=<as n_estpn>     (summary.json and job.json copied from job_g04)
  vla eval CKPT (as n_estpn) perturb=none|action_noise:0.02 poses=runs/s18/job_g04_pn500/perception/estimator
  python benchmarks/robustness_training.py --runs runs/s18/robn --only n_estpn500      (n_estpn linked)

The p_* variants (the pose estimator on the deployed policy's rollouts; runs/s19/q_pr.sh, q_pr3.sh, q_real.sh):

  vla run out_dir=runs/s19/job                                    # the preset, as `make run`
  vla run out_dir=runs/s19/job_pr100_sN "stages=[perception]" overwrite=false perception.policy_episodes=0 \
      perception.episodes=200 perception.policy_rollouts=100 "perception.overrides=[seed=N]"
      (p_est: out_dir=runs/s19/job_est_sN without the episodes and rollouts; both with summary.json and job.json
       copied from runs/s19/job; seed 0 is runs/s19/job itself and runs/s19/job_pr100)
  vla eval runs/s19/job/refine/iter_01/train/checkpoints/step_00000250 $EV runtime=onnx \
      perturb=none|realistic|action_noise:0.02 poses=<the estimator>        (p_gt: no poses=)
  python benchmarks/robustness_training.py --runs runs/s19/robv --only p_gt,p_est,p_pr100
  (p_prw: runs/s19/q_wide.sh, out_dir=runs/s19/job_prw_sN as p_pr100 + perception.randomize=<the preset's with
   camera_shift:20,camera_rot:3>, N = 0-2; --only p_prw)
  (the notes' averaging and leave-one-out runs, runs/s19/q_smooth.sh and q_loo.sh: the same vla eval with
   poses=runs/s19/job_pr100/perception/estimator and perturb=realistic|none poses_smoothing=0.3
   poses_rest_gate_mm=20, or "perturb=<the preset's 13 camera, image and actuator kinds without one>")
  (p_rall: runs/s20/q_rel.sh, N = 0-2, the same evaluations with perturb=none|realistic|camera_shift:10; p_pr100
   evaluated under camera_shift:10 too, runs/s20/q_base.sh; --runs runs/s20/robv --only p_pr100,p_rall)
  vla perception train runs/s19/job_pr100/perception/train.zarr steps=1000 seed=N relative=all \
      out_dir=runs/s20/est/rall_sN

The c_g04pc2 / c_vis variants (camera-only, training seeds N = 0, 1; runs/s20/q_cam.sh, q_camev.sh, q_camev2.sh):

  vla run out_dir=runs/s20/cam/c_g04pc_sN "stages=[sim_demos,stats,pretrain]" demos.obs_mode=image \
      demos.episodes=400 pretrain.steps=7000 \
      'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=N"]'
      (c_vis: out_dir=runs/s20/cam/c_vis_sN, and
       demos.randomize=pose_latency:2,camera_shift:10,camera_rot:1,surface_colour:0.1,distractor:0.2 and
       "policy.augment_photometric=lighting:0.2,colour:0.05,pixel_noise:3" in the overrides)
  vla eval runs/s20/cam/<v>_sN/train/checkpoints/step_00007000 $EV runtime=onnx \
      perturb=none|realistic|lighting:0.2|surface_colour:0.1|distractor:0.2|colour:0.05|pixel_noise:3 \
      out_dir=runs/s20/robc/<v>/sN/<condition>      (training 1: the first three)
  python benchmarks/robustness_training.py --runs runs/s20/robv2 --only c_g04pc2,c_vis   (robv2: links to robc)
      (c_scene, c_photo: out_dir=runs/s21/cam/<v>_s1; c_scene with c_vis's demos.randomize and no photometric
       override, c_photo with the photometric override and c_g04pc2's demos; perturb=none|action_latency:1 in
       runs/s21/robc/<v>/s1, c_g04pc2's training 1 under action_latency:1 there too; runs/s21/q_abl.sh, q_lat.sh)
  python benchmarks/robustness_training.py --runs runs/s21/robv2 --only c_scene,c_photo

The p_big variant (2026-12-07, runs/s23/q_big.sh: p_prw's randomisation with twice the episodes and steps, the same
refined policy runs/s19/job, three trainings; the rule: runs/s23/decision.txt):

  vla run out_dir=runs/s23/job_big_sN "stages=[perception]" overwrite=false perception.policy_episodes=0 \
      perception.episodes=400 perception.steps=2000 perception.policy_rollouts=100 \
      perception.randomize=<p_prw's> "perception.overrides=[seed=N]"    (job.json, summary.json from runs/s19/job)
  vla eval runs/s19/job/refine/iter_01/train/checkpoints/step_00000250 $EV runtime=onnx perturb=none|realistic \
      poses=runs/s23/job_big_sN/perception/estimator out_dir=runs/s23/robn/big_sN/<condition>
  python benchmarks/robustness_training.py --runs runs/s23/robv --only p_big     (p_pr100 linked from runs/s19/robn)

The p_ens* variants (an ensemble of estimators, runs/s21): p_pr100's estimators (runs/s19/job_pr100*, trained by
`vla run ... "stages=[perception]"` on the same store) read as one, the refined policy of runs/s19/job on 200 tune
seeds (runs/s21/q_ens.sh, q_next.sh, q_2k2.sh, q_more.sh):

  python -c "from vla.perception.estimator import write_ensemble; write_ensemble('runs/s21/ens3', \
      ['../../s19/job_pr100/perception/estimator', '../../s19/job_pr100_s1/perception/estimator', \
       '../../s19/job_pr100_s2/perception/estimator'])"                  (ens2a-c: two of them)
  vla perception train runs/s19/job_pr100/perception/train.zarr out_dir=runs/s21/e2h steps=500 ensemble=2 seed=10
  vla perception train runs/s19/job_pr100/perception/train.zarr out_dir=runs/s21/s2k steps=2000 seed=0
  vla eval runs/s19/job/refine/iter_01/train/checkpoints/step_00000250 $EV runtime=onnx \
      perturb=none|realistic|camera_shift:10 poses=runs/s21/<ens> out_dir=runs/s21/robn/<ens>/<condition>
  python benchmarks/robustness_training.py --runs runs/s21/robv --only p_ens3,p_ens2,p_e2h,p_s2k
      (robv: links to robn, p_ens3's three trainings all its one evaluation)

The c_visn / c_visd / c_vis_te variants (the camera-only recipe under the command noise; paired with c_vis of the
same training seed; the adopt rule written before any reading: runs/s22/decision.txt; runs/s22/q_noise.sh,
q_drop.sh, q_te.sh):

  vla run out_dir=runs/s22/cam/c_visn_s0 (c_vis's command) with demos.randomize=<c_vis's>,action_noise:0.02
      (c_visd: out_dir=runs/s22/cam/c_visd_s0, c_vis's command + demos.drop=0.3 demos.label=clean)
  vla eval runs/s22/cam/<v>_s0/train/checkpoints/step_00007000 $EV runtime=onnx \
      perturb=none|action_noise:0.02|realistic|action_latency:1 out_dir=runs/s22/robc/<v>/s0/<condition>
      (c_vis itself under action_noise:0.02 too, both trainings; c_vis_te: c_vis's two trainings with
       temporal_ensemble=-0.01, perturb=none|realistic|action_latency:1)
  python benchmarks/robustness_training.py --runs runs/s22/robv --only c_vis,c_visn,c_visd,c_vis_te
      (robv: links to every c_vis evaluation in runs/s20/robc, s21/robc and s22/robc)
  python experiments/failure_modes.py --ensemble 0.3 --every 2 --perturb realistic|action_noise:0.02 \
      --seeds 1000000-1000199 --ckpt <c_vis_s0 or c_visd_s0's checkpoint>    (how they fail; runs/s22/q_fm.sh)
  vla eval runs/s20/cam/c_vis_sN/train/checkpoints/step_00007000 $EV runtime=onnx perturb=realistic \
      perturb_ablate=group out_dir=runs/s22/abl/c_vis_sN      (what each group costs inside the preset)
      (c_visl: out_dir=runs/s22/cam/c_visl_sN, c_vis's command with demos.randomize=<c_vis's>,action_latency:1;
       perturb=none|action_latency:1|realistic; N=0: runs/s22/q_lat.sh, N=1: runs/s23/q_lat.sh; paired with
       c_vis_f: c_vis's runs with `realistic` linked to runs/s22/abl/c_vis_sN/full, made after the distractor fix)
      (and perturb=<the preset without its pose kinds and without one actuator kind> out_dir=
       runs/s22/abl/c_vis_sN/without_<kind>: runs/s22/q_act.sh)

The c_viswl / c_visl_x1 / c_visl_x1r6 / c_visl_m01 / c_visl800 variants (2026-12-07, paired with c_visl of the same
training seed; each rule written before its runs: runs/s24/decision.txt; runs/s24/q_wide.sh, q_every1.sh, q_x1b.sh,
q_x1r6.sh, q_mean.sh, q_800.sh, q_t2.sh):

  vla run out_dir=runs/s24/cam/c_viswl_s0 (c_visl's command) with demos.randomize=pose_latency:2,camera_shift:20,\
      camera_rot:3,surface_colour:0.1,distractor:0.2,action_latency:1
      (c_visl800: out_dir=runs/s24/cam/c_visl800_sN, c_visl's command with demos.episodes=800;
       c_visl's training 2: out_dir=runs/s24/cam/c_visl_s2, c_visl's command with train.seed=2)
  vla eval <c_viswl_s0 or c_visl_sN's checkpoint> $EV runtime=onnx \
      perturb=none|camera_shift:10|action_noise:0.02|action_latency:1|realistic out_dir=runs/s24/robc/<v>/sN/<cond>
      (c_visl_x1: $EV with temporal_ensemble_every=1; c_visl_x1r6: the same with temporal_ensemble=0.6;
       c_visl's own camera_shift and action_noise runs: out_dir=runs/s22/robc/c_visl/sN/<cond>)
  vla eval "mean:ckpt=runs/s22/cam/c_visl_s0/train/checkpoints/step_00007000/onnx+<the same of c_visl_s1>" $EV \
      obs_mode=image perturb=<as above> out_dir=runs/s24/robc/c_visl_m01/s0/<cond>       (c_visl_m01; q_mean.sh)
  vla eval runs/s22/cam/c_visl_sN/train/checkpoints/step_00007000 $EV runtime=onnx perturb=realistic \
      perturb_ablate=group out_dir=runs/s24/abl/c_visl_sN           (what each group costs; runs/s24/q_abl.sh)
  python benchmarks/robustness_training.py --runs runs/s24/robv \
      --only c_visl,c_viswl,c_visl_x1,c_visl_x1r6,c_visl_m01,c_visl800
      (robv: links to those runs, camera_shift as `cam`, and to c_vis_f's to pair c_visl with)

The c_visl_r / c_vislS variants (2026-12-07 night, tune, training 0; the rule written before: runs/s30/decision.txt;
runs/s30/q_cam.sh, q_cam2.sh):

  vla run out_dir=runs/s30/cam/c_visl_s0 (c_visl's command; c_visl_r) and out_dir=runs/s30/cam/c_vislS_s0 (the same
      with "policy.augment_shift=4" added to pretrain.overrides; c_vislS)
  vla eval runs/s30/cam/<v>_s0/train/checkpoints/step_00007000 $EV runtime=onnx \
      perturb=none|camera_shift:10|action_noise:0.02|realistic out_dir=runs/s30/robc/<v>/s0/<cond>
  python benchmarks/robustness_training.py --runs runs/s30/robv --only c_visl_r,c_vislS
      (robv: links to those runs, camera_shift as `cam`, runs/s30/robc/c_visl as c_visl_r)

The e_* variants (the pose estimator's randomisation; one policy, runs/main65's refined, its `vla eval ... poses=`
the estimator, perturb=none|camera_shift:10|camera_rot:1|realistic, 200 tune seeds, in
runs/s9/rob/e_<name>/s0/<none|cam|camera_rot|realistic>):

  vla run out_dir=runs/s10/perc_wide "stages=[perception]" perception.policy_episodes=0 \
      perception.randomize=camera_shift:20,camera_rot:3,surface_colour:0.1,distractor:0.3,lighting:0.2,colour:0.05,blur:0.5,pixel_noise:3
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from results_io import RESULTS, write_result
from robustness_findings import NOTES
from robustness_variants import VARIANTS

from vla.metrics import format_paired, paired_difference, t_interval

CONDITIONS = {"none": "clean", "realistic": "realistic", "action_latency": "action_latency:1",
              "cam": "camera_shift:10", "camera_rot": "camera_rot:1", "action_noise": "action_noise:0.02",
              "lighting": "lighting:0.2", "surface_colour": "surface_colour:0.1", "distractor": "distractor:0.2",
              "colour": "colour:0.05", "pixel_noise": "pixel_noise:3"}


def outcomes(summary: Path) -> dict[int, bool] | None:
    """An evaluation's success per seed, None where it has not run (sim.evaluate.read_seed_outcomes of the
    summary's folder)."""
    from sim.evaluate import read_seed_outcomes

    return read_seed_outcomes(summary.parent)


def collect(runs: Path, gpu: dict[str, Any], delay: Path | None = None
            ) -> dict[str, dict[str, dict[str, dict[int, bool]]]]:
    """variant -> training seed -> condition -> {eval seed: success}. `delay`: the execution-side trial's
    evaluations (`<condition>_d<delay>/`)."""
    out: dict[str, dict[str, dict[str, dict[int, bool]]]] = {}
    for variant, d in (("x_refined", 0), ("x_delay1", 1)):
        for cond in ("none", "action_latency"):
            got = outcomes(delay / f"{cond}_d{d}" / "summary.json") if delay else None
            if got is not None:
                out.setdefault(variant, {}).setdefault("0", {})[cond] = got
    for key, run in gpu.get("runs", {}).items():
        variant, seed = key.rsplit("_s", 1)
        for cond, r in run.items():
            if isinstance(r, dict) and "seeds" in r:
                name = "cam" if cond == "camera_shift:10" else cond
                got = {int(s): bool(v) for s, v in r["seeds"].items()}
                out.setdefault(variant, {}).setdefault(seed, {})[name] = got
    for variant in VARIANTS:
        folder = runs / variant
        for cond in CONDITIONS:
            for seed_dir in sorted(folder.glob("s[0-9]*")):
                got = outcomes(seed_dir / cond / "summary.json")
                if got is not None:
                    out.setdefault(variant, {}).setdefault(seed_dir.name[1:], {})[cond] = got
            got = outcomes(folder / cond / "summary.json")  # the camera variants: one training each
            if got is not None:
                out.setdefault(variant, {}).setdefault("1", {})[cond] = got
    return out


def summarise(data: dict[str, dict[str, dict[str, dict[int, bool]]]]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for variant, (what, where, base) in VARIANTS.items():
        if variant not in data:
            continue
        block: dict[str, Any] = {"demos": what, "trained_on": where, "paired_with": base or None}
        for cond, label in CONDITIONS.items():
            per = {s: c[cond] for s, c in data[variant].items() if cond in c}
            if not per:
                continue
            rates = {s: sum(o.values()) / len(o) for s, o in per.items()}
            row: dict[str, Any] = {"perturb": label, "per_training": rates,
                                   "mean": sum(rates.values()) / len(rates), "episodes": len(next(iter(per.values())))}
            ref = data.get(base, {})
            pairs = {(s, e): (ref[s][cond][e], o[e]) for s, o in per.items() if cond in ref.get(s, {})
                     for e in o if e in ref[s][cond]}
            if pairs:
                row["minus_base"] = paired_difference({k: a for k, (a, _) in pairs.items()},
                                                      {k: b for k, (_, b) in pairs.items()})
                row["minus_base_trainings"] = sorted({s for s, _ in pairs})
                # the pooled interval above treats every (training, seed) pair as independent; with several
                # trainings the spread between trainings is the honest width
                per_training = [float(np.mean([b - a for (s, _), (a, b) in pairs.items() if s == t]))
                                for t in row["minus_base_trainings"]]
                if len(per_training) > 1:
                    lo, hi = t_interval(np.array(per_training))
                    row["minus_base_over_trainings"] = {"mean": float(np.mean(per_training)), "lo": lo, "hi": hi,
                                                        "per_training": per_training}
            block[label] = row
        figures[variant] = block
    return figures


def write_page(figures: dict[str, Any]) -> None:
    lines = ["# Training that expects a real arm's errors (tune seeds)", "",
             "Which demos make a policy survive the `realistic` preset (`vla/configs/perturb/realistic.yaml`), read on "
             "200 `tune` seeds with the job's execution before any `report` figure. Command and inputs: the docstring "
             "of `benchmarks/robustness_training.py`. Per training: success; minus base: paired by training seed and "
             "eval seed, 95% t interval (seeds better / worse).", "",
             "| variant | demos | condition | per training | mean | minus base |", "|---|---|---|---|---|---|"]
    for variant, block in figures.items():
        for label in CONDITIONS.values():
            row = block.get(label)
            if row is None:
                continue
            per = ", ".join(f"s{s} {v:.3f}" for s, v in sorted(row["per_training"].items()))
            diff = format_paired(row["minus_base"]) if "minus_base" in row else ""
            over = row.get("minus_base_over_trainings")
            if over:
                diff += (f"; over {len(over['per_training'])} trainings {over['mean']:+.3f} "
                         f"[{over['lo']:+.3f}, {over['hi']:+.3f}]")
            lines.append(f"| {variant} | {block['demos']} | {label} | {per} | {row['mean']:.3f} | {diff} |")
    lines += ["", *NOTES]
    (RESULTS / "robustness_training.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=Path, default=Path("runs/rob61"))
    ap.add_argument("--gpu", type=Path, default=Path("runs/rob61/results.json"))
    ap.add_argument("--delay", type=Path, default=Path("runs/delay61"), help="the execution-side trial's evaluations")
    ap.add_argument("--only", default="", help="comma-separated variants to write (the others keep their stored "
                    "figures): a base linked under --runs only to pair with, whose own figures came from more runs")
    args = ap.parse_args()
    gpu = json.loads(args.gpu.read_text()) if args.gpu.exists() else {}
    fresh = summarise(collect(args.runs, gpu, args.delay))
    # the variants whose evaluations are not under --runs keep their stored figures (each session's runs
    # folder holds only what it re-read)
    stored_path = RESULTS / "robustness_training.json"
    stored = json.loads(stored_path.read_text()).get("variants", {}) if stored_path.exists() else {}
    only = set(args.only.split(",")) - {""}
    unknown = only - set(VARIANTS)
    if unknown:
        ap.error(f"--only: unknown variant {sorted(unknown)[0]!r}")
    fresh = {v: f for v, f in fresh.items() if not only or v in only}
    figures = {v: fresh.get(v, stored.get(v)) for v in VARIANTS if v in fresh or v in stored}
    write_result("robustness_training", {"variants": figures}, seed_range="tune")
    write_page(figures)
    print((RESULTS / "robustness_training.md").read_text())


if __name__ == "__main__":
    main()
