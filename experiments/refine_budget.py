"""How large a refine round the main job needs for a gain its own evaluation can resolve
(`benchmarks/results/main_job_notes.md`).

A round's paired gain on the job's seeds has two kinds of noise: which seeds a fine-tune happens to
flip (about a quarter of them, in both directions, whatever the data: an earlier session's demos-only control)
and the number of evaluation seeds. An uncontended job takes about 12 of its 15 minutes, and an
evaluation episode about half a second of one core at noise 0, so the job can afford more rollouts
and more evaluation seeds than the 20 / 50 it used. Each variant below is one `vla refine` round from
the job's pretrained checkpoint, evaluated on `--eval-episodes` seeds from 1000 (the job's), paired
by seed with the pretrained policy and with the demos-only control of the same training seed:

    python experiments/refine_budget.py --job runs/main26 --out runs/r17 [--only hg100_s0,control_s0]
    python experiments/refine_budget.py --job runs/main26 --out runs/r17 --report   # refine_budget.md/.json
    python experiments/refine_budget.py --job runs/main26 --out runs/r17 \\
        --losses hg100_nw999_s0,control_nw999_s0,hg100_nw999_share30_s0,hg100_s0,hg100_nw999_long_s0,\\
control_nw999_long_s0   # window_losses

The runs behind `refine_budget.md` (`vla run out_dir=runs/main26` with the preset of that
day, whose refine round was refine's defaults; every variant run with OMP_NUM_THREADS=1, two at a
time, since two torch threads per trainer beside two evaluation workers on 2 cores made a fine-tuning
step 3.9 s instead of 0.12 s): all variants of VARIANTS with seed 0, and control_s1, hg100_s1, control_nw999_s1,
hg100_nw999_s1, hg20_nw999_s1; a later round added hg100_nw999_clip2, _guard, _yaw30 and _yaw30_share30, each with
seeds 0 and 1 (why they were tried: `failure_modes.py` and main_job_notes.md). The job's own round today is
`hg20_nw999`: for a fresh job,
`refine_budget_main28.md` pairs it with its controls (the job's pretrained evaluation and refine
folder copied in as `pretrained_eval` and `hg20_nw999_s0`; `_main27` is the same for a job run
before its pretraining was seeded):

    python benchmarks/bench_main_job.py --out runs/main28
    mkdir runs/r28 && cp -r runs/main28/eval_torch runs/r28/pretrained_eval && \\
        cp -r runs/main28/refine runs/r28/hg20_nw999_s0
    python experiments/refine_budget.py --job runs/main28 --out runs/r28 \\
        --only control_nw999_s0,hg20_nw999_s1,control_nw999_s1 --name refine_budget_main28

Self-imitation was added without a person (`fbc100_nw999`, `fbc100_nw999_te`: filtered BC on the
policy's own successful rollouts, executed plainly or with the temporal ensemble):

    python experiments/refine_budget.py --job runs/main28 --out runs/r28 \
        --only fbc100_nw999_s0,fbc100_nw999_s1,fbc100_nw999_te_s0,fbc100_nw999_te_s1
    python experiments/refine_budget.py --job runs/main28 --out runs/r28 --report --name refine_budget_main28

The job's round was also run on `pick_place_square` (the cube starts square to the hand), from two
camera policies the job's recipe gives there (`main_job_notes.md`): the 2,000-step checkpoint
of a 4,000-step training on 400 demos, and a 3,000-step training on 100 demos:

    vla run out_dir=runs/sq4k demos.task=pick_place_square pretrain.steps=4000 \\
        "stages=[sim_demos,stats,pretrain,eval]" eval.onnx=false \\
        'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.ckpt_every=1000","train.keep_checkpoints=0"]'
    vla eval runs/sq4k/train/checkpoints/step_00002000 task=pick_place_square episodes=200 \\
        seed_range=collect seed_offset=1000 n_action_steps=4 temporal_ensemble=0.3 temporal_ensemble_every=2 \\
        out_dir=runs/rsq/pretrained_eval
    python experiments/refine_budget.py --job runs/sq4k --ckpt train/checkpoints/step_00002000 --out runs/rsq \\
        --only control_nw999_s0,hg20_nw999_s0,hg20_nw999_share30_s0,hg40_nw999_share30_s0,\\
dag20_nw999_s0,control_nw999_s1,hg20_nw999_s1 \\
        --extra task=pick_place_square --extra temporal_ensemble=0.3 --extra temporal_ensemble_every=2 \\
        --name refine_budget_square
    # 100 demos: vla run out_dir=runs/sq100 demos.episodes=100 pretrain.steps=3000 (otherwise as above),
    # its eval_torch copied to runs/rsq100/pretrained_eval, then --job runs/sq100 --out runs/rsq100
    # --ckpt train/checkpoints/step_00003000 --only control_nw999_s0,hg20_nw999_s0 --name refine_budget_square_d100
    # a state policy (object poses, no cameras) on 20 demos:
    # vla sim collect runs/sqs20/demos.zarr episodes=20 task=pick_place_square obs_mode=state cameras=[]
    # vla train runs/sqs20/demos.zarr --out runs/sqs20/train --policy tiny train.steps=3000 train.batch_size=32 \\
    #   train.lr=1e-3 policy.noise_scale=0 train.ckpt_every=3000; its vla eval (as above, obs_mode=state cameras=[]) in
    # runs/rsqs20/pretrained_eval, then --job runs/sqs20 --ckpt train/checkpoints/step_00003000 --out runs/rsqs20
    # --only control_nw999_s0,hg20_nw999_s0 --extra obs_mode=state --extra cameras=[] (and the three --extra
    # above) --name refine_budget_square_state_d20
    # (10 demos: the same with sqs10 / rsqs10 / episodes=10 / refine_budget_square_state_d10)

A later variant froze the camera encoders in the fine-tune (`freeze_vision=true`, the `_fv` variants, each against
the demos-only control frozen the same way) on a 100-demo `pick_place_square` camera base trained this
stop (0.595), and tried random-shift augmentation in its pretraining (`policy.augment_shift=4`: 0.14):

    vla run out_dir=runs/sq100 demos.task=pick_place_square demos.episodes=100 pretrain.steps=3000 \
        "stages=[sim_demos,stats,pretrain,eval]" eval.onnx=false \
        'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.ckpt_every=1000","train.keep_checkpoints=0"]'
    mkdir -p runs/rsq100 && cp -r runs/sq100/eval_torch runs/rsq100/pretrained_eval
    python experiments/refine_budget.py --job runs/sq100 --ckpt train/checkpoints/step_00003000 --out runs/rsq100 \
        --only control_nw999_fv_s0,hg20_nw999_fv_s0,control_nw999_s0,hg20_nw999_s0,hg20_nw999_fv_share30_s0,\
hg100_nw999_fv_s0,hg100_nw999_s0 --extra task=pick_place_square --extra temporal_ensemble=0.3 \
        --extra temporal_ensemble_every=2
    python experiments/refine_budget.py --job runs/sq100 --out runs/rsq100 --report --name refine_budget_square_fv
    # augmentation: the same vla run with out_dir=runs/sq100a and "policy.augment_shift=4" added to the overrides
    # the same cameras with the object poses in the state (obs_mode=state keeps the task's cameras), 10 demos:
    vla sim collect runs/sqh10/demos.zarr episodes=10 task=pick_place_square obs_mode=state workers=2 \
        out_dir=runs/sqh10/collect
    vla train runs/sqh10/demos.zarr --out runs/sqh10/train --policy tiny train.steps=3000 train.batch_size=32 \
        train.lr=1e-3 policy.noise_scale=0 train.ckpt_every=3000
    vla eval runs/sqh10/train/checkpoints/step_00003000 task=pick_place_square obs_mode=state episodes=200 \
        seed_range=collect seed_offset=1000 n_action_steps=4 temporal_ensemble=0.3 temporal_ensemble_every=2 videos=0 \
        out_dir=runs/rsqh10/pretrained_eval
    python experiments/refine_budget.py --job runs/sqh10 --ckpt train/checkpoints/step_00003000 --out runs/rsqh10 \
        --only control_nw999_s0,hg20_nw999_s0,control_nw999_s1,hg20_nw999_s1 --extra task=pick_place_square \
        --extra obs_mode=state --extra temporal_ensemble=0.3 --extra temporal_ensemble_every=2
    python experiments/refine_budget.py --job runs/sqh10 --out runs/rsqh10 --report \
        --name refine_budget_square_hybrid_d10
    # ... and on the job's task (the cube's yaw as drawn): 40 demos of pick_place, otherwise the same, into
    # runs/pph40 / runs/rpph40 (task=pick_place), variants control_nw999_s0,hg20_nw999_s0,hg100_nw999_s0 and
    # control_nw999 / hg100_nw999 with seeds 1 and 2, report
    # --name refine_budget_hybrid_d40

Resumable: a variant with an evaluated iteration 1 is not run again; the pretrained policy's
evaluation is run once and copied into every variant.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from sim.evaluate import seed_outcomes
from vla.metrics import format_paired, paired_difference

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments/results"
PRETRAINED = "train/checkpoints/step_00007000"  # the job's pretrained checkpoint, relative to its folder
TRAINING_SEEDS = (0, 1, 2)  # suffix _s0 / _s1 / _s2
DEFAULT_SEEDS = (0, 1)  # what runs without --only; the third seed is asked for by name
# name -> (method, rollouts, overrides); each runs with any of TRAINING_SEEDS
VARIANTS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "control": ("hg-dagger", 20, ("method_args.group_shares={demo: 1.0}",)),  # the same steps on the demos alone
    "hg20": ("hg-dagger", 20, ()),  # the job's round
    # the pretrained weights are an average over ~1000 steps (ema 0.999); refine's default 0.99 keeps ~100
    "control_ema999": ("hg-dagger", 20, ("method_args.group_shares={demo: 1.0}", "train.ema_decay=0.999")),
    # ... and with a fresh average's warm-up (vla.train.ema) it forgets them within ~10 steps; without it
    # the fine-tune's average starts at the pretrained weights and keeps 0.999^500 = 61% of them
    "control_nw999": ("hg-dagger", 20, ("method_args.group_shares={demo: 1.0}", "train.ema_decay=0.999",
                                        "train.ema_warmup=false")),
    "hg100_nw999": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false")),
    "hg20_nw999": ("hg-dagger", 20, ("train.ema_decay=0.999", "train.ema_warmup=false")),
    "hg100_nw999_share30": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                               "method_args.group_shares={demo: 0.7, correction: 0.3}")),
    # an eager person: takes over as soon as the policy's moves stray from the expert's (5-step mean of
    # the xyz action difference), not only once it has failed
    "hg100_nw999_dis05": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                             "intervener_args={disagreement_threshold: 0.5}")),
    # three times the steps: the corrections' loss fell only a sixth of the way in 500 (window_losses)
    "control_nw999_long": ("hg-dagger", 20, ("method_args.group_shares={demo: 1.0}", "train.ema_decay=0.999",
                                             "train.ema_warmup=false", "train.steps=1500", "train.ckpt_every=1500")),
    "hg100_nw999_long": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false", "train.steps=1500",
                                            "train.ckpt_every=1500")),
    # the corrections' wrist tilts reach 49 normalised units (demos: 1.6); clipped at 2, which no demo
    # target reaches, so the nw999 controls are this variant's controls (the clipped corrections' loss:
    # 0.72 of 0.79, so the outliers were not what kept it high)
    "hg100_nw999_clip2": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                             "train.target_clip=2")),
    # the person steps in when the policy is about to let go of the cube where the expert would still
    # carry it (sim/intervener.py `release`); on this policy only releases that would have succeeded
    "hg100_nw999_guard": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                             "intervener_args={release_guard: 1}")),
    # the person stops a grasp with the hand turned 30+ degrees from the cube's faces before it closes
    # (sim/intervener.py `crooked_grasp`): 42% of such grasps slip, 8% of the others (failure_modes.py)
    "hg100_nw999_yaw30": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                             "intervener_args={grasp_yaw_guard: 30}")),
    "hg100_nw999_yaw30_share30": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                                     "intervener_args={grasp_yaw_guard: 30}",
                                                     "method_args.group_shares={demo: 0.7, correction: 0.3}")),
    # DAgger: every step the policy takes is labelled with the expert's action from its state (the
    # person still takes over on a failure, as above); the failures are grasps closing off centre, which
    # no takeover flags before they slip (main_job_notes.md), and which a label does
    "dag20_nw999": ("dagger", 20, ("train.ema_decay=0.999", "train.ema_warmup=false")),
    "dag100_nw999": ("dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false")),
    # ... the labels' rotation left as the policy's own: it cannot read the cube's yaw (yaw_probe.py), and the
    # expert's "turn" labels on 42% of its steps (demos: 3%) were most of the loss
    "dag100_nw999_norot": ("dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                           "intervener_args={label_rotation: 0}")),
    # no person: the policy imitates its own successful rollouts (filtered BC, autonomous), executed as
    # the job does (4 steps a chunk) or with the temporal ensemble (0.3) that lifts it at test time; the
    # refined policy is evaluated at 4 steps a chunk either way, so `_te` minus the plain one is what
    # distilling the ensemble's actions adds to self-imitation
    "fbc100_nw999": ("filtered-bc", 100, ("train.ema_decay=0.999", "train.ema_warmup=false", "intervener=")),
    "fbc100_nw999_te": ("filtered-bc", 100, ("train.ema_decay=0.999", "train.ema_warmup=false", "intervener=",
                                             "collect_temporal_ensemble=0.3")),
    "hg100": ("hg-dagger", 100, ()),
    "hg100_ema999": ("hg-dagger", 100, ("train.ema_decay=0.999",)),
    "hg100_share10": ("hg-dagger", 100, ("method_args.group_shares={demo: 0.9, correction: 0.1}",)),
    # pick_place_square: a third of each batch from the corrections, from 20 or 40 rollouts
    "hg20_nw999_share30": ("hg-dagger", 20, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                             "method_args.group_shares={demo: 0.7, correction: 0.3}")),
    "hg40_nw999_share30": ("hg-dagger", 40, ("train.ema_decay=0.999", "train.ema_warmup=false",
                                             "method_args.group_shares={demo: 0.7, correction: 0.3}")),
    # the fine-tune leaves the camera encoders as pretrained (refine's freeze_vision), so that the
    # corrections move the policy over fixed features, as a state policy's do over its coordinates; the
    # demos-only control is frozen the same way
    "control_nw999_fv": ("hg-dagger", 20, ("method_args.group_shares={demo: 1.0}", "train.ema_decay=0.999",
                                           "train.ema_warmup=false", "freeze_vision=true")),
    "hg20_nw999_fv": ("hg-dagger", 20, ("train.ema_decay=0.999", "train.ema_warmup=false", "freeze_vision=true")),
    "hg20_nw999_fv_share30": ("hg-dagger", 20, ("train.ema_decay=0.999", "train.ema_warmup=false", "freeze_vision=true",
                                                "method_args.group_shares={demo: 0.7, correction: 0.3}")),
    "hg100_nw999_fv": ("hg-dagger", 100, ("train.ema_decay=0.999", "train.ema_warmup=false", "freeze_vision=true")),
}


def expand(names: str | None) -> list[tuple[str, str, int, tuple[str, ...], int]]:
    known = {f"{base}_s{seed}" for base in VARIANTS for seed in TRAINING_SEEDS}
    unknown = sorted(set(names.split(",")) - known) if names else []  # before any run starts
    if unknown:
        raise SystemExit(f"--only: unknown variant(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    wanted = set(names.split(",")) if names else {f"{base}_s{seed}" for base in VARIANTS for seed in DEFAULT_SEEDS}
    out = []
    for seed in TRAINING_SEEDS:  # every variant's first training seed before any second one
        for base, (method, rollouts, ov) in VARIANTS.items():
            name = f"{base}_s{seed}"
            if name in wanted:
                out.append((name, method, rollouts, ov, seed))
    return out


def control_of(name: str) -> str:
    """The demos-only control trained like `name` (same EMA settings and seed)."""
    base, seed = name.rsplit("_", 1)
    for tag in ("nw999_fv", "nw999_long", "nw999", "ema999"):
        if base.endswith(tag) or f"_{tag}_" in base:
            return f"control_{tag}_{seed}"
    return f"control_{seed}"


def run_variant(job: Path, out: Path, name: str, method: str, rollouts: int, overrides: tuple[str, ...], seed: int,
                eval_episodes: int, extra: tuple[str, ...] = (), ckpt: str = PRETRAINED) -> None:
    d = out / name
    if (d / "iter_01/eval/summary.json").exists():
        return
    v0 = out / "pretrained_eval"
    if (v0 / "summary.json").exists() and not (d / "iter_00/eval").exists():
        (d / "iter_00").mkdir(parents=True, exist_ok=True)
        shutil.copytree(v0, d / "iter_00/eval")
    t = time.time()
    cmd = [sys.executable, "-m", "vla.cli", "refine", method, "--ckpt", str(job / ckpt),
           "--demos", str(job / "demos.zarr"), "--out", str(d), "iterations=1",
           f"episodes_per_iteration={rollouts}", f"eval_episodes={eval_episodes}", "n_action_steps=4",
           "eval_seed_range=collect", "eval_seed_offset=1000", "train.steps=500", "train.ckpt_every=500", "videos=0",
           f"seed={seed}", *overrides,
           *extra]
    if (d / "config.json").exists():
        cmd.insert(5, "--resume")  # an interrupted variant continues where it stopped
    with open(out / f"{name}.log", "w") as f:
        code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    if code == 0 and not (v0 / "summary.json").exists():
        shutil.copytree(d / "iter_00/eval", v0)
    print(f"[{time.strftime('%H:%M:%S')}] {name}: exit {code}, {time.time() - t:.0f} s", flush=True)


def report(out: Path, results_name: str | None = "refine_budget") -> dict:
    base = seed_outcomes(json.loads((out / "pretrained_eval/summary.json").read_text()))
    order = sorted(base)
    res: dict = {"pretrained": float(np.mean(list(base.values()))), "episodes": len(base),
                 "seeds": [order[0], order[-1]], "pretrained_per_seed": [bool(base[s]) for s in order],
                 "variants": {}}
    lines = ["# The main job's refine round on 200 of its seeds", "",
             f"Command: `python experiments/refine_budget.py --out {out.relative_to(ROOT)} --report --name "
             f"{results_name}` (runs: the docstring of `experiments/refine_budget.py`). Pretrained policy: "
             f"{res['pretrained']:.3f} on seeds {order[0]}..{order[-1]}. One round of 500 fine-tuning steps; "
             "paired by seed, 95% t interval, (seeds better / worse); the control is the demos-only round "
             "trained the same way with the same seed. `main_job_notes.md` says what it means.", "",
             "| variant | rollouts | intervention steps | correction share | success | minus pretrained | "
             "minus control |", "|---|---|---|---|---|---|---|"]
    outcomes = {}
    for p in sorted(out.glob("*/iter_01/eval/summary.json")):
        outcomes[p.parents[2].name] = seed_outcomes(json.loads(p.read_text()))
    for name, r in outcomes.items():
        rec = json.loads((out / name / "records.json").read_text())[-1]
        row = {"success": float(np.mean([r[s] for s in base])), "minus_pretrained": paired_difference(base, r),
               "intervention_steps": rec.get("intervention_steps"), "env_episodes": rec.get("env_episodes"),
               "correction_sample_share": (rec.get("train") or {}).get("correction_sample_share"),
               "per_seed": [bool(r[s]) for s in order]}
        ctrl = outcomes.get(control_of(name))
        if ctrl is not None and not name.startswith("control"):
            row["minus_control"] = paired_difference(ctrl, r)
        res["variants"][name] = row
        print(f"{name:24s} {row['success']:.3f}  - pretrained {format_paired(row['minus_pretrained'])}"
              + (f"  - control {format_paired(row['minus_control'])}" if "minus_control" in row else ""))
        share = row["correction_sample_share"]
        lines.append(f"| {name} | {row['env_episodes']} | {row['intervention_steps']} | "
                     f"{'-' if share is None else f'{share:.3f}'} | {row['success']:.3f} | "
                     f"{format_paired(row['minus_pretrained'])} | {format_paired(row.get('minus_control'))} |")
    if results_name is None:
        return res
    old = RESULTS / f"{results_name}.json"
    kept = json.loads(old.read_text()) if old.exists() else {}
    res.update({k: v for k, v in kept.items() if k.startswith("window_losses")})  # --losses: not rerun here
    old.write_text(json.dumps(res, indent=1))
    (RESULTS / f"{results_name}.md").write_text("\n".join(lines) + "\n")
    return res


def window_losses(out: Path, source: str, names: list[str], job: Path, n_demo: int = 512, reps: int = 3,
                  target_clip: float = 0.0) -> dict[str, dict[str, float]]:
    """Each policy's flow-matching loss (EMA weights, fixed noise draws) on the windows that start at a
    correction step of `source`'s store and on `n_demo` random demo windows: how far a round fitted
    the corrections it was given (targets clipped at `target_clip` when > 0, as `train.target_clip`),
    and each action dimension's part of it (`<group>_per_dim`, 7 numbers averaging to the loss)."""
    import torch
    from torch.utils.data import DataLoader, Subset

    from vla.data.dataset import WindowDataset
    from vla.data.store import EpisodeStore
    from vla.policy.checkpoint import load_config, load_model
    from vla.refine.weights import demo_loss
    from vla.train.trainer import latest_checkpoint

    store = EpisodeStore.open(out / source / "store.zarr")
    groups = {"correction": np.flatnonzero(np.asarray(store.read("is_intervention", 0, store.n_steps), bool)),
              "demo": np.random.default_rng(0).choice(np.flatnonzero(demo_loss(store.table())[1]), n_demo,
                                                      replace=False)}
    ckpts = {"pretrained": job / PRETRAINED,
             **{n: latest_checkpoint(out / n / "iter_01/train") for n in names}}
    cfg = load_config(ckpts["pretrained"])  # the fine-tunes keep its architecture and inputs
    data = WindowDataset(store, obs_horizon=cfg.n_obs_steps, action_horizon=cfg.chunk_size, cameras=cfg.cameras)
    if len(data) != store.n_steps:
        raise ValueError(f"{source}: expected one window per step ({store.n_steps}), got {len(data)}")
    res: dict[str, dict[str, float]] = {}
    for name, ck in ckpts.items():
        model, _ = load_model(ck, use_ema=True)
        model.eval()
        res[name] = {}
        for group, idx in groups.items():
            total, dims = 0.0, np.zeros(cfg.action_dim)
            for rep in range(reps):
                gen = torch.Generator().manual_seed(rep)
                for batch in DataLoader(Subset(data, idx.tolist()), batch_size=128):
                    with torch.no_grad():
                        loss, m = model.compute_loss(batch, generator=gen, target_clip=target_clip, per_dim=True)
                    total += float(loss) * len(batch["state"])
                    dims += np.array([m[f"loss_dim{i}"] for i in range(cfg.action_dim)]) * len(batch["state"])
            res[name][group] = total / (reps * len(idx))
            res[name][f"{group}_per_dim"] = [round(float(x), 4) for x in dims / (reps * len(idx))]
        print(f"{name:24s} correction windows {res[name]['correction']:.4f}  demo windows {res[name]['demo']:.4f}"
              f"  per dimension on the corrections {res[name]['correction_per_dim']}", flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", default="runs/main26")
    ap.add_argument("--out", default="runs/r17")
    ap.add_argument("--eval-episodes", type=int, default=200)
    ap.add_argument("--only", default=None, help="comma-separated variant names (e.g. hg100_s0,control_s0)")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--name", default=None, help="results file names: benchmarks/results/NAME.json/.md (with "
                    "--report: refine_budget unless given; after runs: only written when given)")
    ap.add_argument("--losses", default=None, metavar="VARIANTS",
                    help="instead: flow loss of the pretrained policy and these variants on the correction and "
                         "demo windows of the first one's store (into NAME.json as window_losses)")
    ap.add_argument("--loss-clip", type=float, default=0.0,
                    help="with --losses: targets clipped as train.target_clip (into window_losses_clip<N>)")
    ap.add_argument("--ckpt", default=PRETRAINED,
                    help="the pretrained checkpoint, relative to --job (with --losses: always the default)")
    ap.add_argument("--extra", action="append", default=[], metavar="KEY=VALUE",
                    help="an override added to every variant run in this call (use a separate --out), e.g. "
                         "train.perception_frames=runs/vp1000b/vision.npz")
    args = ap.parse_args()
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.losses:
        names = args.losses.split(",")
        args.name = args.name or "refine_budget"
        res = json.loads((RESULTS / f"{args.name}.json").read_text())
        key = f"window_losses_clip{args.loss_clip:g}" if args.loss_clip > 0 else "window_losses"
        res[key] = {"store": names[0], **window_losses(out, names[0], names, ROOT / args.job,
                                                       target_clip=args.loss_clip)}
        (RESULTS / f"{args.name}.json").write_text(json.dumps(res, indent=1))
        return
    if not args.report:
        for name, method, rollouts, ov, seed in expand(args.only):
            run_variant(ROOT / args.job, out, name, method, rollouts, ov, seed, args.eval_episodes, tuple(args.extra),
                        args.ckpt)
    # after runs the table is printed; a results page is written only when named, so that runs in
    # another --out never overwrite the default page with their figures
    report(out, args.name or ("refine_budget" if args.report else None))


if __name__ == "__main__":
    main()
