"""The variants of `robustness_training.py` and what their readings found: each variant's recipe, where it was
trained and the base it is paired with (VARIANTS), and the findings written under the page's table (NOTES).
Their commands are the docstring of `robustness_training.py`, which reads the evaluations and writes the page."""

from __future__ import annotations

# name -> (what its demos are, where it ran, the base it is paired with)
VARIANTS: dict[str, tuple[str, str, str]] = {
    "s_base": ("the job's demos (expert gain 1.5)", "gpu", ""),
    "s_rand": ("randomize=realistic: every kind, severities from [0, realistic]", "gpu", "s_base"),
    "s_g07": ("expert gain 0.7", "cpu", "s_base"),
    "s_g07r": ("expert gain 0.7 + randomize=action_latency:1,pose_latency:2,camera_shift:10,camera_rot:1", "cpu",
               "s_base"),
    # re-read without the rendering defect (2026-12-05): 3 trainings each (training seeds 0-2), runs/s9/rob
    "t_base": ("the job's demos (expert gain 1.5); runs/main65, runs/s7/pre_s1, pre_s2", "cpu", ""),
    "t_g07": ("expert gain 0.7", "cpu", "t_base"),
    "t_g07r": ("expert gain 0.7 + randomize=action_latency:1,pose_latency:2,camera_shift:10,camera_rot:1", "cpu",
               "t_base"),
    "t_g07l": ("expert gain 0.7 + randomize=action_latency:1 (the ablation: latency only)", "cpu", "t_base"),
    "t_g07pc": ("expert gain 0.7 + randomize=pose_latency:2,camera_shift:10,camera_rot:1 (no action latency)",
                "cpu", "t_base"),
    "t_g07pcd": ("as t_g07pc (the default's demos) + DART: the expert's execution noised (demos.noise=0.05, half on "
                 "rotation), its clean actions recorded (demos.label=clean)", "cpu", "t_g07pc"),
    # the refine stage's rollouts under a real arm's actuator errors (2026-12-05): t_g07pc's three pretrainings
    "r_clean": ("t_g07pc's pretrainings refined as the main job refines (HG-DAgger, 2 rounds of 100 rollouts, 500 "
                "steps each), clean rollouts", "cpu", "t_g07pc"),
    "r_ctrl": ("the refine's demos-only control: the same rounds, rollouts and steps, every batch from the demos "
               "(method_args.group_shares={demo: 1.0})", "cpu", "t_g07pc"),
    "r_rand": ("the same refine, its rollouts (not its evaluations) under the preset's actuator kinds, drawn per "
               "episode: collect_randomize=action_latency:1,action_noise:0.02,action_gain:0.1,rate_jitter:0.05",
               "cpu", "r_clean"),
    # the pose estimator's own randomisation (2026-12-05): main65's refined policy on its poses, runs/s10/est
    "e_job": ("the job's estimator (randomize camera_shift:10,camera_rot:2,...) under runs/main65's refined "
              "policy", "cpu", ""),
    "e_wide": ("an estimator trained on camera_shift:20,camera_rot:3 (the rest as the job's), the same policy",
               "cpu", "e_job"),
    "x_refined": ("the job's refined policy (runs/main61), executed as shipped", "cpu", ""),
    "x_delay1": ("the same policy, each chunk started at its action for t + 1 (a known one-step delay; "
                 "tried and removed)", "cpu", "x_refined"),
    # the default preset's pretraining made again (2026-12-05, runs/s12: the same demos and training seeds as t_g07pc,
    # not the same weights: CPU training is not bit-reproducible here) and refined as r_clean, beside the refine whose
    # rollouts carry the demos' own randomisation
    "v_pre": ("t_g07pc's recipe trained again (training seeds 0-2), runs/s12/g07pc_sN", "cpu", ""),
    "v_clean": ("v_pre refined as the main job refines (as r_clean)", "cpu", "v_pre"),
    "v_sens": ("the same refine, its rollouts (not its evaluations) under the demos' own randomisation, drawn per "
               "episode: collect_randomize=pose_latency:2,camera_shift:10,camera_rot:1", "cpu", "v_clean"),
    # the execution's temporal ensemble under the actuator kinds (2026-12-05): v_pre's trainings 0 and 1
    "x_te1.0_every2": ("v_pre's policy, temporal ensemble rate 1.0 (the job's: 0.3), a chunk every 2 "
                       "steps", "cpu", "v_pre"),
    "x_te0.3_every1": ("the same, rate 0.3, a chunk every step", "cpu", "v_pre"),
    "x_te1.0_every1": ("the same, rate 1.0, a chunk every step", "cpu", "v_pre"),
    "x_te-0.01_every2": ("the same, rate -0.01 (every live chunk about equal), a chunk every 2 steps", "cpu",
                         "v_pre"),
    "x_te-0.3_every2": ("the same, rate -0.3 (the older chunks weigh more), a chunk every 2 steps", "cpu", "v_pre"),
    "xv_te-0.01_every2": ("v_clean's refined policy (the job's recipe), rate -0.01, a chunk every 2 steps", "cpu",
                          "v_clean"),
    "i_base": ("camera-only: the job's camera recipe, 400 demos, 7,000 steps (runs/cam61)", "cpu", ""),
    # the camera-only policy on the default preset's demos (2026-12-05, runs/s13/cam; training seeds 0 and 1)
    "c_base": ("camera-only (obs_mode=image, 400 demos, 7,000 steps) on the earlier default's demos (expert gain "
               "1.5, no randomisation: runs/cam61's recipe trained again), runs/s13/cam/i_base_sN", "cpu", ""),
    "c_g07pc": ("camera-only, the same, on the default preset's demos (expert gain 0.7, each demo's camera pose "
                "drawn: camera_shift:10,camera_rot:1; pose_latency does not apply), runs/s13/cam/i_g07pc_sN",
                "cpu", "c_base"),
    "c_g04pc": ("camera-only, the same recipe on the gain-0.4 demos (the default's since 2026-12-06), "
                "runs/s17/cam/i_g04pc_s0 (training seed 0)", "cpu", "c_g07pc"),
    "c_g07pc_te": ("c_g07pc's policies, temporal ensemble rate -0.01 (the job's: 0.3)", "cpu", "c_g07pc"),
    # two observation steps (the policy sees its own motion), one training each (2026-12-06, runs/s14/q_h3.sh)
    "h2": ("t_g07pc's recipe with policy.n_obs_steps=2 (the state and images of t and t-1), runs/s14/h2", "cpu",
           "t_g07pc"),
    "h2l": ("as h2, on demos whose action latency is drawn as well (randomize=action_latency:1,pose_latency:2,"
            "camera_shift:10,camera_rot:1), runs/s14/h2l", "cpu", "t_g07pc"),
    "t_g07pcf": ("as v_pre (the default's demos) + the expert's drift: half the demos pushed sideways near grasp "
                 "height, then centred by the expert, its clean actions recorded (demos.drift=0.5 demos.label=clean), "
                 "runs/s15/g07pcf_sN", "cpu", "v_pre"),
    "t_g07pcr": ("as v_pre (the default's demos) + the expert's executed rotation noised, 2% of full scale every step, "
                 "its clean actions recorded (demos.rot_noise=0.02 demos.label=clean), runs/s16/g07pcr_sN", "cpu",
                 "v_pre"),
    "t_g04pc": ("as v_pre (the default's demos) but the expert's gain 0.4 (the default's: 0.7), runs/s17/g04pc_sN",
                "cpu", "v_pre"),
    "n_gt": ("the gain-0.4 job's refined policy (runs/s17/job_g04) on the simulator's poses", "cpu", ""),
    "n_est": ("the same policy on its job's estimator's poses (the estimator trained on noise-free expert frames)",
              "cpu", "n_gt"),
    "n_estpn": ("the same policy on an estimator trained on frames of an expert whose commands carry the 2% noise "
                "(perception.randomize + action_noise:0.02), runs/s17/job_g04_pn", "cpu", "n_est"),
    # the main job's 15-minute budget (2026-12-06, runs/s18/q_t.sh, q_t2.sh): fewer pretraining and estimator steps
    "t_s2000": ("as t_g04pc (the default's recipe) with 2,000 pretraining steps (the default's: 3,000), "
                "runs/s18/pre_s2000_N", "cpu", "t_g04pc"),
    "n_estpn500": ("as n_estpn, the estimator trained 500 steps (n_estpn's: 1,000), runs/s18/job_g04_pn500", "cpu",
                   "n_estpn"),
    # the pose estimator on the deployed policy's own rollouts (2026-12-06, runs/s19): one refined policy, the
    # estimator trained three times (training seeds 0-2) on each store
    "p_gt": ("the default job's refined policy (runs/s19/job: `vla run` with the preset) on the simulator's poses",
             "cpu", ""),
    "p_est": ("the same policy on the preset's estimator (300 randomised expert episodes, 1,000 steps), trained "
              "three times, runs/s19/job (seed 0), runs/s19/job_est_sN", "cpu", ""),
    "p_pr100": ("the same policy on an estimator trained on 200 of those expert episodes and 100 of the policy's own "
                "rollouts under the same randomisation (perception.policy_rollouts=100), the same steps, "
                "runs/s19/job_pr100 (seed 0), runs/s19/job_pr100_sN", "cpu", "p_est"),
    "p_prw": ("as p_pr100 with the camera pose randomised twice as wide in the estimator's episodes (camera_shift:20,"
              "camera_rot:3; the preset's: 10, 2), runs/s19/job_prw_sN", "cpu", "p_pr100"),
    # every object's position estimated from the hand (2026-12-06 evening, runs/s20/q_rel.sh): the same store
    "p_rall": ("as p_pr100 with every object's position estimated from the hand (perception relative=all; the "
               "preset's: moving, the cube only), trained on runs/s19/job_pr100's store, runs/s20/est/rall_sN",
               "cpu", "p_pr100"),
    # an ensemble of estimators read as their mean pose (2026-12-06 night, runs/s21/q_ens.sh, q_next.sh, q_2k2.sh):
    # the same policy and store as p_pr100
    "p_ens3": ("p_pr100's three estimators read as one (vla.perception.estimator.PoseEnsemble: the mean pose), "
               "paired with each of its members (the same evaluation under s0-s2), runs/s21/ens3", "cpu", "p_pr100"),
    "p_ens2": ("two of p_pr100's estimators read as one, paired with its first member: s0 {0, 1}, s1 {1, 2}, "
               "s2 {2, 0}, runs/s21/ens2a-c", "cpu", "p_pr100"),
    # a bigger estimator recipe (2026-12-07, runs/s23/q_big.sh; the rule written before any reading:
    # runs/s23/decision.txt): p_prw's randomisation, twice the expert episodes and twice the steps
    "p_big": ("as p_prw (the camera pose randomised twice as wide) with 400 expert episodes (200) and 2,000 steps "
              "(1,000), the same 100 policy rollouts, runs/s23/job_big_sN", "cpu", "p_pr100"),
    "p_e2h": ("the ensemble at one estimator's compute: two members of 500 steps (seeds 10, 11; the preset's one: "
              "1,000), the same store, runs/s21/e2h", "cpu", "p_pr100"),
    "p_s2k": ("the equal-compute control of a two-member ensemble: one estimator of 2,000 steps (seed 0), the same "
              "store, runs/s21/s2k", "cpu", "p_pr100"),
    # visual domain randomisation for the camera-only policy (2026-12-06 evening, runs/s20/q_cam.sh, q_camev.sh)
    "c_g04pc2": ("camera-only, c_g04pc's recipe trained again (training seed 0), runs/s20/cam/c_g04pc_s0", "cpu", ""),
    "c_vis": ("as c_g04pc2 with the scene kinds in the demos (demos.randomize adds surface_colour:0.1,distractor:0.2) "
              "and photometric draws in training (policy.augment_photometric=lighting:0.2,colour:0.05,pixel_noise:3): "
              "the preset's severities, chosen before any run; runs/s20/cam/c_vis_s0", "cpu", "c_g04pc2"),
    # which half of c_vis costs its training 1 the latency (2026-12-06 night, runs/s21/q_abl.sh): training seed 1
    "c_scene": ("as c_g04pc2 with only the scene kinds in the demos (c_vis's demos, no photometric draws), training "
                "seed 1, runs/s21/cam/c_scene_s1", "cpu", "c_g04pc2"),
    "c_photo": ("as c_g04pc2 with only the photometric draws in training (c_g04pc2's demos), training seed 1, "
                "runs/s21/cam/c_photo_s1", "cpu", "c_g04pc2"),
    # the camera-only recipe's grasps slip under command noise (2026-12-07, runs/s22/q_noise.sh, q_drop.sh; the rule
    # written before any reading: runs/s22/decision.txt): training seeds 0 and 1, paired with c_vis of the same seed
    "c_visn": ("as c_vis with the command noise drawn per demo episode too (demos.randomize adds action_noise:0.02: "
               "executed, the expert's own commands recorded); stopped after training 0, runs/s22/cam/c_visn_s0",
               "cpu", "c_vis"),
    "c_visd": ("as c_vis with recovery demos: 30% of them drop the cube once and the expert picks it up again "
               "(demos.drop=0.3 demos.label=clean); stopped after training 0, runs/s22/cam/c_visd_s0", "cpu", "c_vis"),
    "c_vis_te": ("c_vis's policies executed with temporal ensemble rate -0.01 (the job's: 0.3)", "cpu", "c_vis"),
    # c_vis read after the stale-distractor fix (4f9f51c): its `realistic` runs made again (the ablation's whole-preset
    # runs, runs/s22/abl/c_vis_sN/full), its clean and latency runs c_vis's (no distractor drawn in them)
    "c_vis_f": ("c_vis, its `realistic` runs made after the stale-distractor fix (runs/s22/abl/c_vis_sN/full)", "cpu",
                "c_vis"),
    # 2026-12-07: training 0 (runs/s22/q_lat.sh), training 1 (runs/s23/q_lat.sh); the rule of runs/s22/decision.txt
    "c_visl": ("as c_vis with one tick of action latency drawn per demo episode too (demos.randomize adds "
               "action_latency:1); runs/s22/cam/c_visl_s0, s1; training 2 (the same demos, read for the spread "
               "only, no c_vis to pair with) runs/s24/cam/c_visl_s2", "cpu", "c_vis_f"),
    # 2026-12-07 (runs/s24/decision.txt, each rule written before its runs): the camera pose drawn twice as wide in
    # the demos, and the same policies executed with a chunk every step (runs/s24/q_wide.sh, q_every1.sh, q_x1r6.sh)
    "c_viswl": ("as c_visl with the camera pose drawn twice as wide per demo (demos.randomize camera_shift:20,"
                "camera_rot:3 instead of camera_shift:10,camera_rot:1); stopped after training 0, "
                "runs/s24/cam/c_viswl_s0", "cpu", "c_visl"),
    "c_visl_x1": ("c_visl's policies executed with a chunk every step (temporal_ensemble_every=1; the job's 2), "
                  "rate 0.3", "cpu", "c_visl"),
    "c_visl_x1r6": ("c_visl's policies executed with a chunk every step and the rate doubled "
                    "(temporal_ensemble=0.6 temporal_ensemble_every=1: the job's weight per chunk from chunks half "
                    "as old)", "cpu", "c_visl"),
    "c_visl800": ("as c_visl with 800 demos instead of 400 (the same 7,000 steps); runs/s24/cam/c_visl800_s0, s1",
                  "cpu", "c_visl"),
    "c_visl_m01": ("the mean of c_visl's two trainings' chunks (mean:ckpt=<training 0's ONNX export>+<training "
                   "1's>), executed as the job does; one policy, its runs linked as training 0 and as training 1 so "
                   "that it pairs with each member", "cpu", "c_visl"),
    # 2026-12-07 night (runs/s30/decision.txt, the rule written before; runs/s30/q_cam.sh, q_cam2.sh): c_visl trained
    # again at HEAD (its checkpoints were lost), and the same with DrQ's random shift in training
    "c_visl_r": ("c_visl trained again at HEAD with its own command (training seed 0), runs/s30/cam/c_visl_s0: the "
                 "pair for c_vislS", "cpu", ""),
    "c_vislS": ("as c_visl with DrQ's random shift in training (policy.augment_shift=4: +-4 px at 84 px); stopped "
                "after training 0, runs/s30/cam/c_vislS_s0", "cpu", "c_visl_r"),
    "i_rand": ("camera-only: randomize=realistic (pose kinds left out), 6,000 of 7,000 steps", "gpu+cpu", "i_base"),
    "i_rand_shift": ("camera-only: as i_rand + 4-pixel random shifts in training", "gpu+cpu", "i_base"),
}
NOTES = [
    "- **Rendered with a defect (found 2026-12-04, fixed in 4fc4657):** the invisible distractor cube, parked 5 m "
    "down from 16:09 that day, tripled the model's extent and so moved every camera's near clipping plane to "
    "6 cm, clipping the wrist camera's view of the fingers. It took the job's refined policy from 0.88 to 0.66 "
    "clean. Every local run here after that time saw it: s_g07 and s_g07r (their demos and their evaluations) "
    "and the camera-only evaluations. The device runs (s_base, s_rand, the camera trainings) started from the "
    "tree of their own start, before the commit. So s_g07 and s_g07r against s_base mix two renderings. These "
    "figures are a development reading that awaits a re-run; the `report` figures of robustness.md were re-measured.",
    "- The device runs (`trained_on` gpu) evaluated `realistic` before the preset had its `distractor` kind; "
    "the runs here include it. On s_g07's first training the first 100 seeds score 9 with it and 9 without.",
    "- The expert's gain: at 1.5 (the job's) it overshoots every step; a command one step late makes it ring "
    "(37 -> 80 steps) and two steps late fail every episode; at 0.7 it is as quick late as on time "
    "(`tests/sim/experts/test_native.py`). Demos of the high-gain expert under randomised latency ring, a "
    "likely part of why `s_rand` and `i_rand` lost their clean success (not separated from the other kinds).",
    "- Starting each chunk at its action for t + 1 (the execution knowing the arm's one-step delay, without "
    "conditioning the new chunk on the command still in flight) made things worse and was removed."
    " Re-tried on 2026-12-05 on `runs/main65`'s refined policy (100 tune seeds, the job's execution; the "
    "code was reverted again): under a 1-step latency 0.52 with the shift against 0.73 without, 0.08 with"
    " the shift and no latency (0.93 clean), 2 steps 0.23 against 0.30; shifting only the arm's actions "
    "and keeping the gripper's first action, 11/30 against 23/30. The policy's later chunk actions are "
    "worse than its first (around the grasp its gripper command is 1.0 first and 0.09 one action later), "
    "so only training can buy latency here."
    " A third try (2026-12-06, the code reverted once more) on the default recipe's refined policy "
    "(runs/s14/job_a, simulator's poses, 200 tune seeds, the job's execution): under the 1-step latency 0.670 "
    "with the shift and 0.670 without (41 seeds better, 41 worse: the shift reshuffles which episodes fail and"
    " buys nothing), under `realistic` 0.630 against 0.570, +0.060 [-0.040, +0.160]; a chunk every step "
    "instead of every 2 under the latency, 0.655. Where the latency loses them (4 seeds the policy solves "
    "clean, recorded step by step): the hand, still moving sideways when the policy stops it, runs one more "
    "tick and comes down 2-3 cm beside the cube; at grasp height the policy never corrects sideways, and the "
    "episode times out with nothing picked (all 66 failures under the latency end without `pick_cube`). The "
    "scripted expert, which re-aligns above the cube before it descends and corrects sideways at any height, "
    "loses nothing to the same latency at gain 0.7 (50/50, 44 steps against 46).",
    "- `s_g07` re-read without the rendering defect on 2026-12-05 (one training each, training seed 0, 200 tune "
    "seeds, the job's execution): the job's pretraining on gain-0.7 demos scored 0.915 clean against "
    "0.750 for the job's own (gain 1.5), +0.165 [+0.101, +0.229] (40 / 7); under a 1-step action latency "
    "0.665 against 0.605, +0.060 [-0.021, +0.141]. So the gentler expert buys a better policy, not a "
    "larger share kept under latency (0.73 against 0.81); `runs/s8/g07`, not yet a second training or a "
    "job run.",
    "- The t_* rows (2026-12-05) re-read all three demos without the rendering defect, 3 trainings each (training "
    "seeds 0-2, the demos the same), the base the job's own pretrainings. The rule fixed before the third "
    "trainings were read: the variant with the highest `realistic` success whose clean success is not below the "
    "base's by more than the over-trainings interval. Gain 0.7 alone: clean +0.103 [-0.240, +0.447] over 3 "
    "trainings (0.915, 0.895, 0.700: its third training is no better than the base) and realistic -0.055. Gain "
    "0.7 with latency and camera randomisation: realistic +0.287 over 3 trainings (every training gains: "
    "+0.320, +0.135, +0.405; the t interval with 2 degrees of freedom is [-0.056, +0.630]), a 1-step latency "
    "+0.243 [+0.138, +0.349], clean -0.090 [-0.192, +0.012] (pooled over the 600 pairs -0.090 [-0.138, -0.042]). "
    "It keeps more than its clean success under `realistic` (0.667 against 0.643): its demos carried the latency "
    "the preset adds. It is the variant the rule picks, so the main job was run with it (runs/main66): on the "
    "report range its refined policy keeps 0.600 under `realistic` against the shipped job's 0.315, +0.285 "
    "[+0.198, +0.372], but scores 0.815 clean against 0.925, -0.110 [-0.171, -0.049], deploys 17/20 and takes "
    "990 s (robustness.md, block job_robust). The clean loss is larger than the issue allows and the job leaves "
    "its budget, so the default preset keeps the job's demos and the recipe is `make run-robust`.",
    "- Where the clean loss comes from (t_g07l, 3 trainings, tune): gain 0.7 with only the action latency "
    "randomised scores 0.560 clean (0.610 / 0.435 / 0.635), below t_g07r in every training (-0.083 over "
    "3 trainings [-0.173, +0.007]), as well under a 1-step latency (0.735 against 0.738) and 0.518 under "
    "`realistic`, -0.148 [-0.206, -0.091] against t_g07r (every training). So the latency randomisation "
    "buys the latency and costs the clean success; the pose-latency and camera kinds cost nothing clean and "
    "buy the rest of `realistic`. Demos half of which run one tick late teach a policy that leads the arm, "
    "which then overshoots when nothing is late.",
    "- Without the action latency (t_g07pc, 3 trainings, tune, 2026-12-05): gain 0.7 with pose latency and camera "
    "pose randomised scores 0.873 clean (0.860 / 0.870 / 0.890), +0.140 [+0.059, +0.221] over the base's 3 "
    "trainings, 0.532 under `realistic` (+0.152 [+0.072, +0.232]) and 0.690 under a 1-step action latency "
    "(+0.195 [+0.019, +0.371]): every interval above zero, every training above its base. Against gain 0.7 "
    "alone (t_g07, the same expert) it keeps the clean success (0.873 against 0.837) and adds +0.21 under "
    "`realistic`: demos whose poses arrive late teach most of what demos whose commands arrive late did "
    "(0.690 against t_g07r's 0.738 under the action latency) without the overshoot. It keeps less under "
    "`realistic` than t_g07r (0.532 against 0.667) and is better clean (0.873 against 0.643). The rule above "
    "would pick t_g07r again, but t_g07r's whole job lost 0.110 clean on the report range; t_g07pc is the "
    "variant that gains on both, so the main job was run on it (runs/main67). On the report range it kept 0.485 "
    "under `realistic` against 0.315 and scored 0.885 clean against 0.925 (-0.040 [-0.090, +0.010]), so it is the "
    "main job's preset since 2026-12-05 (robustness.md, blocks job and job_gain15).",
    "- DART on those demos (t_g07pcd, 3 trainings, tune): the expert's execution noised (demos.noise=0.05, half on "
    "rotation) and its clean actions recorded, against the action kinds the job still fails. It costs the clean "
    "success, 0.727 against 0.873 (-0.147 [-0.300, +0.007]; every training, pooled -0.147 [-0.186, -0.108]). It "
    "does worse under the 2% command noise it was meant for, 0.697 against 0.828. It is level under a 1-step "
    "latency (-0.017) and under `realistic` (+0.022 [-0.058, +0.102]). A single noise level was tried (0.05, "
    "chosen before any run). Noised demos teach the recovery, but 40 of them at this noise teach a worse "
    "approach.",
    "- The refine stage's rollouts under a real arm's actuator errors (r_clean, r_rand; t_g07pc's three "
    "pretrainings, 200 tune seeds, 2026-12-05). The main job's HG-DAgger refine with clean rollouts (r_clean) "
    "against its pretrained policy: clean +0.027 [-0.056, +0.109] over 3 trainings, under the 2% command noise "
    "+0.042, but under a 1-step action latency -0.058 [-0.109, -0.008] (every training: -0.055, -0.080, -0.040) "
    "and under `realistic` -0.060 [-0.114, -0.006] (-0.075, -0.070, -0.035). So the refine stage, as the job "
    "runs it, trades robustness to the arm's delay for little clean success; the losses are at the grasp "
    "(pick_cube), the episodes no slower. The same refine with its rollouts under the preset's actuator kinds, "
    "drawn per episode (r_rand: collect_randomize=action_latency:1,action_noise:0.02,action_gain:0.1,"
    "rate_jitter:0.05, chosen before any run), against r_clean: clean +0.005 [-0.135, +0.145], realistic +0.032 "
    "[-0.128, +0.191], latency -0.005, noise -0.003; training 0 lost in every condition and training 1 gained in "
    "every one. The person's corrections where the arm's errors put the policy buy nothing measurable, so "
    "the main job keeps clean rollouts (`collect_randomize` stays, off by default).",
    "- Is it the corrections or the fine-tuning? The refine's demos-only control (r_ctrl: the same rounds, "
    "rollouts and steps, every batch from the demos) against the pretrained policy: clean -0.012 [-0.050, "
    "+0.026], latency +0.030 [-0.046, +0.106], realistic -0.018 [-0.050, +0.013], noise -0.003. So fine-tuning "
    "alone keeps the robustness. The refine against its control, per training: clean +0.060 / +0.020 / +0.035 "
    "(+0.038 [-0.012, +0.089]), 2% command noise +0.045 [-0.045, +0.135], 1-step latency -0.065 / -0.145 / "
    "-0.055 (-0.088 [-0.211, +0.034]), `realistic` -0.070 / -0.040 / -0.015 (-0.042 [-0.110, +0.027]). Every "
    "training loses under the latency against its control; with 3 trainings the interval still reaches above "
    "zero. Why is not measured; a guess: the corrections teach grasps timed for a hand that is on time.",
    "- The same question again on new weights (v_*, runs/s12, 2026-12-05): the default preset's pretraining "
    "trained again from the same demos and training seeds (v_pre; CPU training here does not repeat its weights: "
    "training 0 read 0.690 under the latency against t_g07pc's 0.775, the same 0.860 clean) and refined as r_clean "
    "(v_clean). Refine - pretrained: clean -0.075 / +0.005 / +0.065 (-0.002), 1-step latency -0.020 / -0.005 / "
    "-0.035 (-0.020 [-0.057, +0.017]), `realistic` +0.030 / -0.045 / +0.005 (-0.003). Over the six trainings of "
    "r_clean and v_clean: clean +0.013 [-0.042, +0.067], a 1-step action latency **-0.039 [-0.067, -0.012]** "
    "(all six below their pretrained policy), `realistic` -0.032 [-0.075, +0.012]. So on today's demos the refine "
    "stage buys no clean success on the tune seeds and costs robustness to a one-tick delay; the size of that "
    "cost read on r_clean alone (-0.058, `realistic` -0.060) was at the high end.",
    "- Do the corrections lose it because their rollouts lack the demos' randomisation? v_sens ran the same "
    "refine with its rollouts under the demos' own kinds (collect_randomize=pose_latency:2,camera_shift:10,"
    "camera_rot:1; the stored states are the late poses and moved cameras the policy saw, the person acts on the "
    "simulator's). The rule, fixed before v_sens's trainings 1 and 2 were read: adopt it if over 3 trainings its "
    "mean against v_clean is above zero under both the latency and `realistic`, clean within its interval. "
    "v_sens - v_clean: clean +0.030 [-0.155, +0.215], latency +0.018 [-0.139, +0.176] (+0.030 / -0.050 / +0.075), "
    "`realistic` **-0.037** [-0.192, +0.119] (-0.080 / -0.065 / +0.035); against v_pre: latency -0.002, "
    "`realistic` -0.040. It fails the rule, so the job keeps clean rollouts; the guess above stays unexplained.",
    "- The execution's side of the delay (x_te*, v_pre's pretrained policies, 200 tune seeds, 2026-12-05). The job's "
    "temporal ensemble weighs each live chunk's prediction exp(-rate x age), rate 0.3 (chosen clean). Under a "
    "one-tick action latency the rate decides most of the loss, on training 0: rate 1.0 (the newest chunk "
    "dominates) 0.420 every 2 steps and 0.395 every step, rate 0.3 0.690 (0.675 every step), rate -0.01 (every "
    "live chunk about equal, ACT's weighting) 0.795, rate -0.3 (the older weigh more) 0.595 (0.760 clean). A "
    "policy fed every step by its newest chunk, one tick late, chases its own correction; averaging the live "
    "chunks damps it, until the average lags. A chunk every step instead of every 2 changes little (latency "
    "-0.015, 2% command noise +0.040). Rate -0.01 over 3 trainings: latency +0.093 [-0.039, +0.226] (+0.105 / "
    "+0.035 / +0.140, pooled +0.093 [+0.054, +0.132]), clean -0.017 [-0.092, +0.058] (-0.020 / -0.045 / +0.015), "
    "`realistic` +0.035 (+0.020 / -0.005 / +0.090), 2% command noise +0.005 (training 0). Chosen here; read on "
    "the report range in ensemble_latency.md. The refined policy of the same training (xv: v_clean's training 0) "
    "gains less from it under the latency, +0.030 [-0.032, +0.092] against its pretrained policy's +0.105.",
    "- The camera-only policy on the default preset's demos (c_*, runs/s13/cam, 2026-12-05; 2 trainings each, "
    "training seeds 0 and 1, 200 tune seeds, the job's execution). The camera-only recipe (obs_mode=image, 400 "
    "demos, 7,000 steps) on the demos the main job has used since 2026-12-05 (expert gain 0.7, each demo's camera "
    "pose drawn up to 10 mm and 1 degree; the pose latency does not apply to a policy without poses) against the "
    "same recipe on the earlier demos (gain 1.5, no randomisation: runs/cam61's, trained again). A 10 mm camera "
    "shift: 0.742 against 0.385, +0.357 (+0.420 / +0.295: kept 0.96 of clean against 0.51); `realistic` (its "
    "pose kinds left out) 0.335 against 0.200, +0.135 (+0.035 / +0.235); a 1-step action latency 0.535 against "
    "0.427, +0.107 (+0.055 / +0.160); clean 0.772 against 0.750, +0.022 (-0.035 / +0.080); a 1-degree camera "
    "turn 0.765 (kept 0.99). Every training gains under every perturbation; with two trainings the "
    "over-trainings interval is wide, the pooled one (400 pairs) is above zero for each. The remaining loss is "
    "the arm's delay: 0.535 under a 1-step latency against 0.772 clean. Rate -0.01 of the temporal ensemble on "
    "the same policies (c_g07pc_te): latency +0.058 (+0.010 / +0.105), `realistic` +0.072 (+0.040 / +0.105), "
    "clean +0.010 (+0.015 / +0.005), as on the state policies (x_te-0.01_every2).",
    "- Two observation steps (h2, h2l; 2026-12-06, training 0 only, tune, paired with t_g07pc's training 0): could "
    "a policy that sees its own motion ride out the arm's one-tick delay, or tell a delayed arm from a prompt one "
    "when its demos hold both? Neither: on the default's demos (h2) clean 0.835 against 0.860 (-0.025 [-0.087, "
    "+0.037]) and under the latency 0.425 against 0.690 (-0.265 [-0.342, -0.188]); on demos with the latency "
    "drawn too (h2l) clean 0.695 (-0.165 [-0.230, -0.100]), latency 0.610 (-0.080 [-0.161, +0.001]). Likely the "
    "history makes the policy lean on the last step's motion, which the delay breaks; one observation step stays.",
    "- The expert's drift near the grasp (t_g07pcf; 2026-12-06, 3 trainings, tune, paired with v_pre, the same"
    " demo seeds and training seeds): where the latency loses episodes, the hand comes down 2-3 cm beside the "
    "cube and the policy never corrects sideways, so half the demos had the executed motion pushed sideways "
    "for 3 steps once the hand came within 5 cm of the cube (about 2 cm off at 6-7 cm height), the expert "
    "centring again before it went on down, its clean actions recorded (`demos.drift=0.5 demos.label=clean`; "
    "the push, the height and the share chosen before any run, from the failures' offsets). It costs clean "
    "success, 0.805 against 0.872 (-0.067 [-0.104, -0.029] pooled over 600 pairs; every training: -0.115, "
    "-0.060, -0.025), and buys nothing where it was aimed: under the 1-step latency 0.633 against 0.643 "
    "(-0.010 [-0.053, +0.033]), under `realistic` 0.480 against 0.505 (-0.025). As with DART (t_g07pcd), demos"
    " that show the way back from a displaced hand do not teach this policy to take it when the delay puts it "
    "there; the preset does not use it (`demos.drift` stays, off by default).",
    "- Where the 2% command noise hurts (2026-12-06, `experiments/action_noise_dims.py`; the default job's refined "
    "policy of runs/s14/job_a, the simulator's poses, 200 tune seeds, each paired with its clean 0.785): the noise "
    "on every dimension -0.035 [-0.080, +0.010]; on the translation only +0.005 [-0.033, +0.043]; on the rotation "
    "only -0.060 [-0.103, -0.017]; on the tilt (roll, pitch) only -0.040 [-0.084, +0.004]; on the yaw only +0.015. "
    "So it hurts through the tilt. The policy does not hold the hand upright: over the 200 episodes its tilt "
    "averages 0.8 degrees in steps 10-30 and 1.1 in 30-60 clean, 1.8 and 2.5 under tilt noise; the expert under the "
    "same noise (30 episodes) holds 0.6-0.9, its labels righting the hand every step; past step 100 (the long, "
    "failing episodes) the policy's hand is 10 degrees off on average, up to 40. Righting the tilt for it (a "
    "diagnostic, `--right-tilt`: the executed roll and pitch replaced by "
    "the expert's righting command) buys +0.025 [-0.013, +0.063] clean, nothing under a 1-step latency "
    "(-0.010) and +0.025 [-0.033, +0.083] under `realistic` (0.595 against 0.570), so the tilt is the noise's way "
    "in and not what the clean or the delayed policy fails by; a controller that held the hand upright would "
    "close the noise's row and leave the preset's loss, which is the latency's.",
    "- DART on the rotation (t_g07pcr; 2026-12-06, tune, paired with v_pre, the same demo and training seeds): the "
    "expert's executed rotation noised by the command noise's own 2% of full scale (the level chosen before any "
    "run: DART matches the noise the learner will meet), its clean actions recorded, so the demos show the hand "
    "tilted (mean 0.65 degrees against 0.5 clean, up to 1.9) and the expert righting it. It costs most of the clean "
    "success: 0.575 against 0.860 (-0.285 [-0.365, -0.205]) and 0.660 against 0.895 (-0.235 [-0.308, -0.162]) "
    "for trainings 0 and 1; under the 2% noise 0.555 against 0.810 (training 0). The noise barely moves it "
    "(-0.020), but from far lower. Its policy tilts more than v_pre's, not less (1.2 against 0.5 degrees in steps "
    "10-30, 2.4 against 0.7 in 30-60, 30 clean episodes each). Stopped after two trainings, both a quarter down. "
    "As with DART on every dimension (t_g07pcd) and the drift (t_g07pcf), demos with the way back from a "
    "disturbance cost this 40-demo policy more than they teach it; `demos.rot_noise` stays, off by default.",
    "- The pose estimator's own randomisation (e_job, e_wide; one policy, runs/main65's refined, 200 tune seeds, one "
    "estimator training each): trained on camera shifts up to 20 mm and rotations up to 3 degrees (the job's: 10 mm, "
    "2 degrees, so the preset's 10 mm sat at the edge of its range), the policy on its poses scores 0.735 under "
    "camera_shift:10 against 0.655, +0.080 [+0.014, +0.146], and 0.365 under `realistic` against 0.305, +0.060 "
    "[-0.005, +0.125]. Clean it is level, 0.850 against 0.860 (-0.010 [-0.062, +0.042]), and camera_rot:1 is "
    "+0.010. Its error on unrandomised frames is larger (median cube 6.4 mm, zone 8.4 mm against 5.7 and 6.6: "
    "runs/s10/perc_wide). That is one estimator training, so it is a development reading, not yet the job's.",
    "- **A gentler expert still (t_g04pc; 2026-12-06, tune, paired with v_pre, the same demo seeds and training "
    "seeds 0-2):** the expert's gain 0.4 instead of 0.7, nothing else changed. Over the 3 trainings: clean 0.977 "
    "against 0.872, +0.105 [+0.083, +0.127]; one tick of action latency 0.980 against 0.643, +0.337 [+0.103, "
    "+0.570]; `realistic` 0.793 against 0.505, +0.288 [+0.098, +0.478]; the 2% command noise 0.960 (training 0: "
    "0.955 against 0.810). Kept under the latency 1.00, under the noise 0.98, under the whole preset 0.81. Why: "
    "the expert is a proportional controller on the remaining error (the speed clip aside), and the policy "
    "imitates its loop gain. With one tick of delay a gain-0.7 loop overshoots by 61% of the remaining error and "
    "settles within 2% in 22 steps; a gain-0.4 loop overshoots by 12% and settles in 8, as it does with no delay "
    "(gain 1.5 diverges, held only by the speed clip). The expert itself succeeds 30/30 at either gain with or "
    "without the delay; its demos are 68 steps long against 46. This is the latency loss that the changes tried since "
    "2026-12-04 did not close (randomised latency in the demos lifted it at a cost in clean success; DART, refine "
    "rollouts under the actuator kinds and the temporal ensemble's rate did not): it was the demos' loop gain. "
    "Adopted as the main job's default (`demos.gain: 0.4`) on these seeds.",
    "- **Where the command noise gets in on the gain-0.4 job (n_gt, n_est, n_estpn; 2026-12-06, tune, one policy: "
    "runs/s17/job_g04's refined):** on the simulator's poses the 2% command noise costs it nothing (0.975 against "
    "0.980 clean); on its job's estimator's poses it costs 0.19 (0.785, -0.190 [-0.248, -0.132] against the "
    "simulator's poses under the same noise; clean the estimator costs -0.010). So on the job the noise gets in "
    "through the pose estimator, which learnt the poses from frames of an expert whose hand never tilts. An "
    "estimator trained on frames of an expert whose commands carry the same 2% noise (the job's "
    "perception.randomize plus action_noise:0.02, nothing else changed; one estimator training) takes back 0.075 "
    "of it: 0.860 against 0.785 under the noise, +0.075 [+0.019, +0.131], and 0.965 against 0.970 clean. Kept "
    "under the noise 0.89 against 0.81. A development reading of one estimator: not yet the job's default, and "
    "not measured on `report`.",
    "- **The camera-only policy on the gain-0.4 demos (c_g04pc; 2026-12-06, tune, one training, paired with "
    "c_g07pc's training 0):** 400 demos, 7,000 steps, as before. Clean 0.860 against 0.745, +0.115 [+0.037, "
    "+0.193]; one tick of latency 0.865 against 0.490, +0.375 [+0.298, +0.452] (kept 1.01); `realistic` 0.445 "
    "against 0.250, +0.195 [+0.108, +0.282] (kept 0.52). The latency is closed for the camera policy too; what "
    "the whole preset still costs it is not yet split by kind, and it is one training, not measured on `report`.",
    "- **Cheaper settings for the main job's 15-minute budget (t_s2000, n_estpn500; 2026-12-06, tune):** 2,000 "
    "pretraining steps against 3,000 (t_s2000 against t_g04pc, the same demos and training seeds 0-2): clean "
    "0.963 against 0.977, -0.013 [-0.064, +0.037] over the trainings (-0.035 for training 1, +0.005 and -0.010 "
    "for the others); one tick of latency 0.980 against 0.980. Adopted in the job's preset. The noisy-command "
    "pose estimator trained 500 steps against 1,000 (n_estpn500 against n_estpn, the same refined policy): "
    "cube error 8.8 mm median against 5.8; under the 2% command noise 0.815 against 0.860, -0.045 [-0.098, "
    "+0.008], clean 0.945 against 0.965, -0.020 [-0.048, +0.008]. Not adopted: the estimator keeps 1,000.",
    "- **The pose estimator on the deployed policy's own rollouts (p_gt, p_est, p_pr100; 2026-12-06, tune, one "
    "refined policy: runs/s19/job's, the preset as `make run` runs it):** on the simulator's poses the policy scores "
    "0.965 clean and 0.800 under `realistic` (the preset's pose kinds on the true poses); on the preset's estimator "
    "(three trainings) 0.938 and 0.670. So under `realistic` the estimator costs the policy more (-0.13) than every "
    "other kind together (-0.165 from clean, on true poses). Its errors under the preset are where the failures "
    "are: the cube's median error 16.7-17.2 mm against 7.4-7.5 clean, 49-50 mm in the failed episodes against 14 in "
    "the successful ones (`estimated_poses.error_mm`, two trainings). The estimator trained on 200 of the expert "
    "episodes and 100 of the policy's own rollouts under the same randomisation (perception.policy_rollouts=100; "
    "300 episodes either way, the same 1,000 steps): `realistic` 0.718 against 0.670, +0.048 [+0.017, +0.080] "
    "over the three trainings (every training gained: +0.05, +0.06, +0.035); clean 0.958 against 0.938, +0.020 "
    "[-0.046, +0.086]; the cube's median error under `realistic` 10.5-11.3 mm. The 2% command noise alone (one "
    "training) 0.905 against 0.895: on this policy the noise costs the estimator little on these seeds. Adopted in "
    "the job's preset (perception.episodes=200, policy_rollouts=100).",
    "- **The estimator's camera pose randomised twice as wide (p_prw against p_pr100; 2026-12-06, tune, the same "
    "policy, three trainings each):** camera_shift:20,camera_rot:3 in the estimator's episodes (the preset's 10 mm, "
    "2 degrees; e_wide tried it on an older policy and an expert-only estimator): `realistic` 0.753 against 0.718, "
    "+0.035 [-0.019, +0.089] over the trainings (+0.06, +0.025, +0.02); clean 0.945 against 0.958, -0.013 [-0.021, "
    "-0.006]. The zone's median error clean rose from 5.3-5.6 mm to 9.1-9.6. Not adopted: the gain under the "
    "preset is not told from nothing and clean pays for it.",
    "- **Averaging the new estimator's readings (2026-12-06, tune, one estimator: runs/s19/job_pr100's, the job's "
    "since):** the zone over the episode and the cube while it rests (`vla eval ... poses_smoothing=0.3 "
    "poses_rest_gate_mm=20`, runs/s19/q_smooth.sh): `realistic` 0.735 against 0.710, +0.025 [-0.028, +0.078]; "
    "clean 0.945 against 0.940, +0.005 [-0.017, +0.027]. What the same averaging read on an older estimator (+0.03, "
    "docs/deployment.md); not taken, and the pose node still has no rest gate.",
    "- **Which kind the whole preset still loses by (2026-12-06, tune, the same policy and estimator, the preset "
    "without one kind at a time, runs/s19/q_loo.sh, paired with the whole preset's 0.710):** without the 10 mm "
    "camera shift 0.785, +0.075 [+0.001, +0.149] (the cube's median error 9.4 mm against 11.3); without the "
    "one-tick latency 0.700 (-0.010), without the command noise 0.720 (+0.010), without the lighting 0.725 "
    "(+0.015). So under the preset the estimator's reading of moved cameras is what is left to fix; the latency "
    "and the noise, which cost as much alone on `report`, cost nothing measurable once the cameras have moved.",
    "- **Every object's position from the hand (p_rall against p_pr100; 2026-12-06 evening, tune, the same policy "
    "and store, three trainings each):** a camera moved by 10 mm moves the zone's image as it moves the hand's, "
    "so the zone's offset from the hand should survive it where its place in the world does not. It does not "
    "hold over trainings: under camera_shift:10 0.852 against 0.830 (+0.085, +0.035, -0.055 for trainings 0-2); "
    "under `realistic` 0.725 against 0.718 (+0.040, +0.005, -0.025); clean 0.983 against 0.958 (+0.050 [+0.020, "
    "+0.080], +0.010, +0.015). Its clean median errors: the zone 7.9-9.1 mm, the cube 5.4-6.4 (the preset's "
    "estimator on `report`: 6.1 and 6.6). On the twice-as-wide store (rallw, one training against p_prw's "
    "training 0) `realistic` 0.680 against 0.770. The preset's estimator under camera_shift:10 alone scores "
    "0.800, 0.835 and 0.855 over its three trainings (kept 0.85-0.89 on these seeds): the training seed moves it "
    "as much as any recipe tried since. Not adopted.",
    "- **Visual domain randomisation for the camera-only policy (c_vis against c_g04pc2; 2026-12-06 evening, tune, "
    "training seeds 0 and 1, the same demo seeds):** the scene kinds drawn per demo (surface_colour:0.1, "
    "distractor:0.2, beside the camera pose the recipe already drew) and photometric draws per training sample "
    "(policy.augment_photometric=lighting:0.2,colour:0.05,pixel_noise:3), all at the preset's severities, chosen "
    "before any run. `realistic` 0.518 against 0.398: +0.100 [+0.015, +0.185] and +0.140 [+0.054, +0.226] for "
    "trainings 0 and 1, +0.120 [+0.060, +0.180] over the 400 seed pairs. Lighting: +0.290 [+0.218, +0.362] for "
    "training 1, whose base falls to 0.585 under it (training 0's base keeps 0.78, and c_vis is level there, "
    "-0.015). Clean 0.835 against 0.848: -0.060 [-0.120, +0.000] and +0.035 [-0.014, +0.084], -0.013 [-0.052, "
    "+0.027] over both. On training 0 every single visual kind keeps >= 0.97 of clean (lighting 0.97, surface "
    "colour 1.00, distractor 0.97, colour 1.02, pixel noise 1.02; the base 0.92, 0.96, 0.89, 0.99, 0.96). The "
    "retrained base reproduces c_g04pc (clean 0.845 against 0.860). Two trainings, so the gain under the preset "
    "is told from nothing per training but not yet over trainings. On `report` (robustness.json's camera_only, "
    "measured as camera_only_vis: "
    "training 0, the one fixed before the runs, paired with c_g04pc2's training 0 evaluated there too, "
    "runs/s20/rep_cbase_*): clean 0.780 against 0.870, -0.090 [-0.154, -0.026]; `realistic` 0.525 against 0.475, "
    "+0.050 [-0.039, +0.139]; kept under the preset 0.67 against 0.55, and every single kind but the command noise "
    "(0.87) kept >= 0.96. More robust by ratio, but training 0 pays for it in clean success beyond the interval "
    "the issue allows, so the stop of that evening kept the camera-only recipe. Training 1 on `report` too "
    "(2026-12-06 night, runs/s21/q_camrep1.sh, q_camblock.sh; robustness.json camera_only_t1 and "
    "camera_only_recipe_change): clean 0.925 against its base's 0.875, +0.050 [+0.000, +0.100]; `realistic` 0.585 "
    "against 0.340, +0.245 [+0.155, +0.335]; over the 400 seed pairs of both trainings clean -0.020 [-0.061, "
    "+0.021] and `realistic` +0.147 [+0.084, +0.211]. So clean stays within its interval over the trainings the "
    "tune choice was made on, and c_vis is the camera-only recipe since (the `camera_only` block: its training "
    "0; the one before renamed camera_only_g04). Training 1 keeps every visual kind >= 0.94 but only 0.73 under "
    "one tick of latency (training 0: 0.97): 0.675 against its base's 0.820, -0.145 [-0.214, -0.076], a cost "
    "of the recipe on that training that `realistic` (which holds the latency) outweighs; the command noise "
    "0.775 against 0.815. The actuator kinds are what the camera-only policy still loses by. "
    "`policy.augment_photometric` stays off by default in the policy config (the recipe sets it). On tune too "
    "(runs/s21/q_lat.sh): training 1 under one tick of latency 0.660 against its base's 0.810, -0.150 [-0.221, "
    "-0.079]. Which half (c_scene, c_photo: training seed 1 only, runs/s21/q_abl.sh): the scene kinds alone "
    "0.810 (+0.000 [-0.054, +0.054]), clean 0.840 (-0.010); the photometric draws alone 0.675 (-0.135 [-0.207, "
    "-0.063]), clean 0.890 (+0.040). So on this training seed the photometric draws cost the latency robustness; "
    "one seed, so whether they do on others is the next thing to measure. Training 0 under latency on tune: c_vis "
    "0.735 against its base's 0.755, -0.020 [-0.090, +0.050] (on report it kept 0.97); over the two trainings "
    "-0.085.",
    "- **An ensemble of estimators (p_ens3, p_ens2 against p_pr100; p_e2h and p_s2k its compute controls; "
    "2026-12-06 night, tune, the same refined policy and store, runs/s21):** the members' mean pose "
    "(`perception ensemble=N`, or an `ensemble.json` naming estimators trained elsewhere). Rule fixed before the "
    "last four readings (runs/s21/decision.txt): adopt two members in the job if the two-member ensembles beat "
    "their members' mean under `realistic` and the equal-compute single estimator does not reach them. Five "
    "single estimators (seeds 0-4) score 0.710, 0.730, 0.715, 0.710, 0.730 under `realistic`: the seed moves "
    "the preset little. Two members: {0, 1} 0.775, {1, 2} 0.720, {0, 2} 0.745, {3, 4} 0.710, against their "
    "members' means +0.055, -0.003, +0.033, -0.010 (+0.019 on average). Three members: 0.740 (+0.022 over its "
    "members' mean; the pooled interval in the table counts one evaluation three times, the one over trainings "
    "is the honest one), clean 0.980 against 0.940 / 0.975 / 0.960, camera_shift:10 0.825 against 0.800 / "
    "0.835 / 0.855. One estimator trained twice as long (the equal compute of two members) 0.725 against 0.710 "
    "for its seed; two members of 500 steps each (one estimator's compute) 0.655, their held-out error twice "
    "the 1,000-step one's. The rule's letter is met (0.738 against 0.725), but the ensembles' gain (+0.02) is "
    "what the equal-compute control also gets and within every interval, and two members would add a training "
    "(about 100 s) to the 15-minute job. Not adopted; the option stays. Why it buys so little: on 60 tune "
    "episodes of the expert under the preset's visual kinds (experiments/pose_ensemble_spread.py, "
    "pose_error_bias.py; the store's command in the first one's docstring), the errors are shared by the "
    "members. Their spread correlates with the mean's error at Spearman 0.26 (cube) and 0.15 (zone), and most "
    "of the error is one offset per episode: the zone's bias 10.7 mm at the median against 3.6 mm of what "
    "varies about it, the resting cube's 8.2 and 6.2 (the three-member ensemble: 9.2 and 2.6, 6.9 and 5.2). "
    "A self-calibration from the hand was tried offline (experiments/hand_self_calibration.py): an "
    "estimator of the hand's position from the images alone, whose offset from the arm's exact position would "
    "measure a moved camera. It is 18 mm off at the median on held-out frames, its per-episode offsets "
    "correlate with the objects' at -0.17 to 0.69 per axis, and subtracting them made both objects worse (the "
    "zone 10.7 -> 14.1 mm, the cube 8.8 -> 17.4). Nor does the other way round (`--relative`): an image-only "
    "estimator of each object's offset from the hand, the arm's exact hand position added back, puts the zone "
    "28.9 mm off (bias 17.5) and the cube 9.7 (7.5); the preset's estimator reads the arm state and is not "
    "forced to place the zone from the hand's image, and the hand's image places it no better than 18 mm. "
    "Not pursued. Nor do the twice-as-wide estimators (p_prw) gain as an ensemble (2026-12-07, runs/s22/ensw3, "
    "the same policy, tune): their three-member mean scores 0.745 under `realistic` against its members' 0.770, "
    "0.755 and 0.735 (-0.025, -0.010, +0.010).",
    "- **The camera-only recipe under the command noise (c_visn, c_visd, c_vis_te against c_vis; 2026-12-07, tune; "
    "the adopt rule written before any reading, runs/s22/decision.txt: realistic pooled over both trainings "
    "mean > 0 with lo > 0, clean pooled mean > -0.03):** the preset's 2% command noise costs c_vis 0.120 [0.067, "
    "0.173] (training 0) and 0.085 [0.041, 0.129] (training 1) on tune. How it fails "
    "(experiments/failure_modes.py --perturb, training 0, 200 tune seeds): under the noise 133 successes, 42 "
    "slipped grasps, 25 never held; under `realistic` 111, 60 slipped, 27 never held. The slipped grasps sit "
    "off centre along the pads (18 mm against 5.6 for the held ones under `realistic`) and turned from the cube "
    "(23 degrees against 10), the end-to-end policy's old weakness (main_job_notes.md); after a slip the policy "
    "carries the empty hand to the zone and waits there (a video of tune seed 1000001: the cube held at step 35, "
    "beside the fingers at 50, the hand over the zone from 100 to the end). Three changes tried: "
    "(1) c_visn, the noise drawn per demo (executed, the expert's own commands recorded: DART at the preset's "
    "severity): training 0 clean 0.635 against 0.785, -0.150 [-0.226, -0.074]; under the noise 0.540 against "
    "0.665; `realistic` 0.425 against 0.560; latency 0.640 against 0.735. Worse everywhere, as DART was for the "
    "state policy (t_g07pcd); a guess not tested: a chunk's labels carry the expert's answers to noise that has "
    "not happened yet. Stopped after training 0. (2) c_visd, recovery demos (30% drop the cube once and the "
    "expert picks it up again, as drop_demos.json at gain 1.5): training 0 clean 0.730 (-0.055), under the noise "
    "0.635 (-0.030), `realistic` 0.475 (-0.085), latency 0.655 (-0.080). The slips fall (under the noise 24 "
    "against 42) but become releases (11) and regrasps that run out of time (17). Stopped after training 0. "
    "(3) c_vis_te, the same policies executed with temporal ensemble rate -0.01 (the job's 0.3): `realistic` "
    "0.590 against 0.517, +0.072 [+0.028, +0.117] over the 400 pairs (+0.045, +0.100 per training), latency "
    "+0.102 [+0.062, +0.143], but clean 0.802 against 0.835, -0.033 [-0.061, -0.004]: the rule's clean bound "
    "(-0.03) is missed by 0.003 and the clean loss is told from nothing, so not adopted; it is a trade "
    "(kept under `realistic` 0.74 against 0.62), not a gain. None adopted. "
    "Which part of the preset costs c_vis (`vla eval ... perturb=realistic perturb_ablate=group`, both trainings, "
    "tune, after the stale-distractor fix; runs/s22/abl, q_act.sh): the whole preset 0.560 and 0.480; leaving out "
    "the actuator group (latency, noise, gain) gains +0.185 [+0.106, +0.264] and +0.350 [+0.274, +0.426] (0.745 "
    "and 0.830: kept 0.95 and 0.94 of clean); the late ticks +0.030 and +0.080 [+0.023, +0.137]; the camera pose "
    "+0.035 and +0.045, the scene, image and proprio groups -0.025 to +0.025, none told from nothing. One "
    "actuator kind at a time: without the latency +0.095 [+0.014, +0.176] and +0.210 [+0.130, +0.290], without "
    "the noise +0.080 [+0.015, +0.145] and +0.140 [+0.076, +0.204], without the gain error -0.025 and +0.070. So "
    "what the camera-only recipe still loses under the preset is the arm, not the cameras: one tick of latency "
    "and 2% command noise on a policy whose grasps slip. Training the latency in (c_visl: action_latency:1 drawn "
    "per demo; both trainings read against c_vis_f, c_vis with its `realistic` runs made after the stale-distractor "
    "fix; runs/s22/q_lat.sh, runs/s23/q_lat.sh): training 0 under one tick of latency 0.865 against 0.735, clean "
    "0.790 against 0.785, `realistic` 0.530 against 0.560 (-0.030); training 1 latency 0.885 against 0.660 (+0.225 "
    "[+0.156, +0.294]), clean 0.855 against 0.885 (-0.030 [-0.082, +0.022]), `realistic` 0.715 against 0.480 "
    "(+0.235 [+0.154, +0.316]). Pooled over the 400 pairs: latency +0.177 [+0.129, +0.226], clean -0.013 [-0.055, "
    "+0.030], `realistic` +0.102 [+0.041, +0.164]: the rule of runs/s22/decision.txt is met (realistic lo > 0, "
    "clean mean > -0.03). The two trainings disagree under `realistic` (-0.030 and +0.235), so the interval over "
    "trainings spans zero widely; the rule was written on the pooled pairs and its report readings decide "
    "(runs/s23/decision.txt, written before them). On the report seeds (robustness.json camera_only_latency_change, "
    "the same two trainings against c_vis's, 400 pairs): `realistic` +0.080 [+0.019, +0.141] (training 0 0.525 "
    "against 0.540, training 1 0.745 against 0.570), clean +0.005, latency +0.168 [+0.121, +0.214], the command "
    "noise +0.000, and a 10 mm camera shift -0.080 [-0.132, -0.028] (0.745 -> 0.640, 0.870 -> 0.815). The rule is "
    "met: adopted as the camera-only recipe (blocks camera_only and camera_only_t1; c_vis's are camera_only_vis "
    "and camera_only_vis_t1). The camera shift's loss was not read on tune and is not understood. "
    "How it fails under the shift (experiments/failure_modes.py --perturb camera_shift:10, tune, 200 seeds; "
    "runs/s23/q_fm.sh): training 0 126 successes against c_vis's 151, its slipped grasps 37 against 16 (36 degrees "
    "turned from the cube and 19 mm off centre, against 30 and 16), success on cubes that start turned 30-45 "
    "degrees 0.375 against 0.641; training 1 161 against 169, never held 18 against 10. Turned cubes were already "
    "the end-to-end policy's weak grasps; with the latency trained in a moved camera makes them worse.",
    "- **Five more tries at the camera-only recipe's `realistic` loss (2026-12-07, tune; every rule written before "
    "its runs: runs/s24/decision.txt; each against c_visl of the same training seed, 200 seeds a training):** "
    "(1) c_viswl, the camera pose drawn twice as wide in the demos (shift 20 mm, turn 3 degrees: the `realistic` "
    "10 mm is the edge of what c_visl's demos draw): training 0 clean 0.690 against 0.790 (-0.100 [-0.170, "
    "-0.030]), camera shift +0.035 [-0.049, +0.119], `realistic` +0.010; stopped after training 0. (2) c_visl_x1, "
    "a chunk every step instead of every 2 (rate 0.3), 400 pairs: clean +0.033 [+0.004, +0.061], camera shift "
    "+0.037 [+0.007, +0.068], command noise +0.068 [+0.037, +0.098], but one tick of latency -0.033 [-0.059, "
    "-0.006] and `realistic` -0.015 [-0.044, +0.014]: the single kinds gain and the whole preset does not. "
    "(3) c_visl_x1r6, the same at rate 0.6 (the job's weight per chunk, from chunks half as old): `realistic` "
    "-0.068 [-0.110, -0.025], latency -0.035; worse. (4) c_visl_m01, the mean of the two trainings' chunks "
    "(policy spec mean:, vla/policy/mean.py): clean 0.880 against its members' 0.790 and 0.855, latency 0.920 "
    "(0.865, 0.885), command noise 0.790 (0.640, 0.770), camera shift 0.775 (0.630, 0.805), `realistic` 0.665 "
    "(0.530, 0.715); pooled over both members +0.058 [+0.025, +0.090] clean and +0.043 [-0.003, +0.088] under "
    "`realistic`, which misses the rule (lo > 0 and above the better member): the best clean camera-only policy "
    "here, but it keeps 0.76 of it under the preset where training 1 alone keeps 0.84. None adopted. What the "
    "preset costs c_visl (`perturb_ablate=group`, tune, runs/s24/abl): training 0 gains +0.165 [+0.090, +0.240] "
    "without the camera pose and +0.055 without the actuator group; training 1 +0.040 and +0.080 [+0.015, "
    "+0.145]. The two trainings share their demos, so each training seed brings its own weakness; the headline "
    "block reads training 0 (fixed before its readings), which is the weaker one under the preset. (5) c_visl800, "
    "twice the demos (800, the same 7,000 steps): clean -0.052 [-0.098, -0.007] over the 400 pairs (training 0 "
    "0.730 against 0.790, training 1 0.810 against 0.855), `realistic` +0.035 [-0.024, +0.094], camera shift "
    "+0.010, command noise +0.035 [-0.013, +0.083]: not adopted. A third training of c_visl itself (train.seed=2, "
    "the same demos; runs/s24/q_t2.sh, written as descriptive only): clean 0.675, `realistic` 0.580 (kept 0.86), "
    "camera shift 0.605 (0.90), command noise 0.600 (0.89), latency 0.805. Kept under the preset on tune over the "
    "three trainings: 0.67, 0.84, 0.86, so training 0, the headline's, is the one that keeps least; the third "
    "keeps as much as training 1 from a lower clean success.",
    "- **Which part of the preset costs the job (2026-12-07, tune; runs/s23/q_jabl.sh):** the shipped job's refined "
    "policy on its own estimator's poses (runs/s19/job2), `vla eval ... perturb=realistic perturb_ablate=group "
    "poses=<its estimator>` (the pose kinds do not apply: the estimator's errors replace them): the whole preset "
    "0.715; leaving out the camera pose (shift and turn) gains +0.090 [+0.023, +0.157] (0.805), the image kinds "
    "+0.035 [-0.016, +0.086], the scene +0.020, the late ticks +0.000, the actuator group -0.005 [-0.077, +0.067], "
    "the proprio noise -0.035. Unlike the camera-only policy (whose loss is the arm), what the job loses under the "
    "preset goes through its pose estimator: a moved camera shifts every object's estimate by about one offset per "
    "episode (the notes on the estimator ensemble above), and the state policy places the cube where it is told.",
    "- **A bigger estimator recipe (p_big against p_pr100; 2026-12-07, tune, the same refined policy, three "
    "trainings; the rule written before any reading, runs/s23/decision.txt: realistic pooled mean > 0 with lo > 0 "
    "and the mean over trainings > 0, clean pooled mean > -0.02, the job inside its 900 s):** p_prw's wider camera "
    "randomisation (shift 20 mm, turn 3 degrees) with 400 expert episodes and 2,000 steps (the preset's 200 and "
    "1,000). `realistic` 0.825, 0.735, 0.725 against 0.710, 0.730, 0.715 (+0.115 [+0.048, +0.182], +0.005, "
    "+0.010): pooled +0.043 [+0.004, +0.082] over the 600 pairs, but over the trainings +0.043 [-0.111, +0.198] "
    "(one training carries it). Clean 0.962 against 0.958 (+0.003). Its held-out error on clean expert frames: the "
    "cube 4.4-4.6 mm median against 5.7-7.2, the zone 7.1-9.3 against 5.5-5.6 (the wide camera draws cost the zone, "
    "as p_prw's 9.4). The stage takes 314-330 s against 185-193 (the job summed 634 s with the old stage: about "
    "770 s with this one). The rule's letter is met, so the job's preset takes it. On the report seeds (robustness.md, "
    "block job against job_s19, the shipped job's refined policy, its estimator trained again on that job with this "
    "recipe; runs/s23/q_jobbig.sh): `realistic` 0.780 against 0.715 (+0.065 [-0.006, +0.136]), clean 0.955 "
    "against 0.960, every single kind kept >= 0.94: the block meets its target. Estimator seeds 1 and 2 "
    "(q_jobbig12.sh): `realistic` 0.785 and 0.775, clean 0.960 and 0.965 (kept 0.82, 0.80). On report every "
    "training gains about the same (+0.06 to +0.07), where on tune two of three gained nothing: the tune base had "
    "three estimator trainings, the report base one.",
    "- **DrQ's random shift for the camera-only recipe (c_vislS against c_visl_r; 2026-12-07 night, tune, training "
    "0; the rule written before, runs/s30/decision.txt: a lead for report if, pooled over its trainings, a 10 mm "
    "camera shift gains with lo > 0 and clean loses less than 0.03):** every training sample's images shifted by up "
    "to 4 px (padding by the edge, DrQ's and robomimic's setting at 84 px), the one visual augmentation the recipe "
    "had not tried; its worst single kind is a camera shift of about a pixel. It costs the clean success a quarter: "
    "0.550 against 0.760, -0.210 [-0.283, -0.137] (11 / 53), and loses under the shift too (0.515 against 0.665, "
    "-0.150), under the command noise (-0.090) and under the whole preset (0.415 against 0.570, -0.155). Kept "
    "under the shift 0.94 against 0.88, but of a much lower clean success. Stopped after training 0 (training 1 could "
    "not bring the pooled clean loss under 0.03). c_visl trained again at HEAD (c_visl_r) reads 0.760 clean, 0.665 "
    "shifted, 0.600 noised, 0.570 under the preset, against its stored training 0's 0.790, 0.630, 0.640, 0.530 "
    "(the recipe reproduces within its seeds' noise; a training takes 12 minutes on this 2-core machine).",
]
