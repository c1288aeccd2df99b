"""The variants of `robustness_training.py`: each variant's recipe, where it was trained and the base it is paired
with (VARIANTS). What their readings found is `robustness_findings.py`; their commands are the docstring of
`robustness_training.py`, which reads the evaluations and writes the page."""

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
