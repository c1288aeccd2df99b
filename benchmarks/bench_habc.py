"""HABC benchmark with its paired protocol: HABC against SFT paired by seed, with interventions
and in the autonomous setting (no intervener, only the sparse episode outcome), every method at
the same fixed sample shares per group, efficiency (steps and seconds to success) per version,
the critic's held-out AUROC per iteration, and the protocol's minimum detectable difference.

  python benchmarks/bench_habc.py run --out runs/bench_habc --seeds 0,1,2,3,4
  python benchmarks/bench_habc.py report --out runs/bench_habc
  python benchmarks/bench_habc.py diagnose --run autonomous/habc/seed1   # why own steps hurt
  python benchmarks/bench_habc.py prep --task stack3 --demos 400 --steps 4000,8000,12000,16000,20000 \
      --train-args "train.lr=1e-3 policy.noise_scale=0"   # another task's base (stack3's: 0.26 at 20,000)
  python benchmarks/bench_habc.py prep --task lift --demos 3   # lift's: 0.16 / 0.26 / 0.24 at 1k / 2k / 3k
  python benchmarks/bench_habc.py run --task lift --settings autonomous --methods sft,habc,demos_only,habc_gated,pa_rl
  python benchmarks/bench_habc.py run --task lift --settings interventions --methods sft,habc,hg_dagger,rac
  python benchmarks/bench_habc.py report --task lift --name habc_lift --json habc
  python benchmarks/bench_habc.py run --out runs/bench_habc_p10 --shares 0.4,0.5,0.1   # other shares: own --out
  python benchmarks/bench_habc.py run --cameras --base-ckpt CKPT --demo-store DEMOS --run-args n_action_steps=4 \
      --out runs/bench_habc_cam --seeds 0   # one camera run per method (a camera policy and its demos)

Base policy: the world-model benchmark's `d15_s3000` (pick_place, 15 demos, state mode; 0.34 on
the evaluation seeds), its demos; `--base` picks another candidate. Inputs (10 min here):
`python benchmarks/wm_candidates.py --out runs/bench_wm/inputs --runs d15`. Runs (`vla refine`,
resumable; the driver skips finished runs, so it can be stopped and continued in another session):
for each seed s, every (setting, method) collects from the same seeds 500000 + 10000 s and is
evaluated on the same 50 seeds 100000+; version 0 is evaluated once.
- settings: interventions (the scripted person takes over and hands back: HG-DAgger's protocol)
  and autonomous (`intervener=`);
- methods: habc, sft; habc_single (the efficiency ablation: one critic, no efficiency head),
  habc_sampled (`method_args.sample_by_weight`: the critic's weights draw the policy's windows),
  habc_gae (`method_args.adv_lambda=0.95`: GAE advantages over each run instead of one step), habc_mc
  (`method_args.adv_lambda=1.0`: the run's outcome minus V, as far from one-step as GAE goes),
  habc_chunk (`own_chunk_only`: the policy's windows supervise only the chunk it executed),
  habc_gated (`method_args.outcome_gate`: only the policy's runs that ended in a success, ranked inside
  them by exp(A / (2 std)) with lambda-1 advantages; beta -> infinity would be filtered BC),
  filtered_bc, pa_rl (PA-RL, arXiv 2412.06685, on the same critic in Q form); with interventions
  rac and hg_dagger (their intervention steps for the RaC / HG-DAgger ratio); in the autonomous
  setting demos_only, the equal-compute control (the same fine-tuning steps on the demos alone).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

# benchmarks/ is this script's folder
from harness import STATE_OBS, evaluate, prep_base, refine_run

# 0.34 on the evaluation seeds in one set of inputs (d15_s1000 0.28); an earlier training of the same
# recipe gave 0.18 (and 0.34): the 15-demo policy varies that much from one training to the next
BASE = "d15_s3000"
SHARES = (0.4, 0.3, 0.3)  # demo, correction, policy: every method's fixed sample shares (--shares)
SETTINGS = {"interventions": (), "autonomous": ("intervener=",)}
METHODS = {"habc": ("habc", ()), "sft": ("sft", ()), "habc_single": ("habc", ("method_args.single_critic=true",)),
           "habc_sampled": ("habc", ("method_args.sample_by_weight=true",)),
           "habc_gae": ("habc", ("method_args.adv_lambda=0.95",)),
           "habc_mc": ("habc", ("method_args.adv_lambda=1.0",)),
           "habc_chunk": ("habc", ("own_chunk_only=true",)),
           # outcome-gated, tempered: only the policy's successful runs, ranked by exp(A / (2 std)) with
           # Monte-Carlo advantages (the efficiency critic sees which successes were fast)
           "habc_gated": ("habc", ("method_args.outcome_gate=true", "method_args.beta=2.0",
                                   "method_args.adv_lambda=1.0")),
           # its efficiency ablation: the same gate and ranking with the viability critic alone
           "habc_gated_single": ("habc", ("method_args.outcome_gate=true", "method_args.beta=2.0",
                                          "method_args.adv_lambda=1.0", "method_args.single_critic=true")),
           "filtered_bc": ("filtered_bc", ()),
           "rac": ("rac", ()), "hg_dagger": ("hg_dagger", ()), "dagger": ("dagger", ()),
           # DAgger with the policy's own rotation in the labels: the expert's roll/pitch corrections are tens of
           # normalised units on demos that barely tilt (dagger_labels.py)
           "dagger_norot": ("dagger", ("intervener_args={label_rotation: 0}",)),
           # ... the policy's own roll and pitch only: the expert's yaw decides when it lets the hand descend
           "dagger_notilt": ("dagger", ("intervener_args={label_tilt: 0}",)),
           # ... and no climb back to hover in the labels: centre at the hand's height
           "dagger_noretreat": ("dagger", ("intervener_args={label_tilt: 0, label_retreat: 0}",)),
           "pa_rl": ("pa_rl", ()),
           # the equal-compute control of the autonomous setting: HG-DAgger without a person trains on
           # the demos alone, for the same steps; a gain it also gets is fine-tuning's, not the method's
           "demos_only": ("hg_dagger", ())}


def share_overrides(name: str, setting: str, shares: tuple[float, float, float]) -> str:
    """The `vla refine` override that fixes the sample shares. PA-RL is a plug-in with its own
    `demo_share` (demos + corrections against its re-ranked chunks): set to what the fixed shares
    give the built-ins (demo + correction with a person; demo / (demo + policy) without one)."""
    d, c, p = shares
    if name == "pa_rl":
        return f"method_args={{demo_share: {d + c if setting == 'interventions' else d / (d + p):.3f}}}"
    return f"method_args.group_shares={{demo: {d}, correction: {c}, policy: {p}}}"


# habc.json names the settings as the benchmark's protocol does
JSON_SETTING = {"interventions": "with_interventions"}
AUTONOMOUS_ONLY = ("demos_only",)  # with a person it would be HG-DAgger
# nothing to learn from without a person: every variant of the methods that learn from the person's actions
CORRECTION_ONLY = tuple(n for n, (m, _) in METHODS.items() if m in ("rac", "hg_dagger", "dagger")
                        and n not in AUTONOMOUS_ONLY)


def base_name(args: argparse.Namespace) -> str:
    """--base, else the base `prep` chose (candidates.json's "base"), else pick_place's BASE."""
    if args.base:
        return str(args.base)
    cands = Path(args.inputs) / "candidates.json"
    return str(json.loads(cands.read_text()).get("base", BASE)) if cands.exists() else BASE


def n_demos(base: str) -> int:
    """The demos a candidate was trained on: `d15_s3000` -> 15 (its store is inputs/demos_15.zarr)."""
    m = re.match(r"d(\d+)", base)
    if m is None:
        raise SystemExit(f"bench_habc: base '{base}' does not start with d<demos> (as d15_s3000 does)")
    return int(m.group(1))


def prep(args: argparse.Namespace) -> None:
    """A base for a task other than pick_place (whose is the world-model benchmark's): `--demos`
    expert demos, a tiny policy on them, the latest checkpoint at 20-50% success (the issue's band)."""
    cands = prep_base(Path(args.inputs).resolve(), args.task, args.demos, args.eval_episodes, (0.2, 0.5),
                      tuple(int(x) for x in args.steps.split(",")), tuple(args.train_args.split()))
    print(f"base {cands['base']} ({cands[cands['base']]['real_success']:.2f})")


def shares_used(out: Path) -> tuple[float, ...] | None:
    """The sample shares of the runs in `out` (older runs did not write them: the default)."""
    if (out / "shares.json").exists():
        return tuple(json.loads((out / "shares.json").read_text()))
    return SHARES if (out / "runs").exists() else None


def run_obs(args: argparse.Namespace) -> tuple[str, ...]:
    """The observation and execution overrides of every evaluation and run: state mode (the seeds' runs),
    or with `--cameras` the task's default cameras (the issue's one camera run per method); `--run-args` after."""
    return (*(() if args.cameras else STATE_OBS), *args.run_args.split())


def run(args: argparse.Namespace) -> None:
    inputs, out = Path(args.inputs).resolve(), Path(args.out).resolve()
    base = base_name(args)
    for kind, names, valid in (("method", args.methods, METHODS), ("setting", args.settings, SETTINGS)):
        bad = sorted(set(names.split(",")) - set(valid))
        if bad:  # before the version-0 evaluation, not after it
            raise SystemExit(f"bench_habc: unknown {kind} '{bad[0]}' (valid: {', '.join(valid)})")
    ckpt = args.base_ckpt or json.loads((inputs / "candidates.json").read_text())[base]["ckpt"]
    demos = Path(args.demo_store).resolve() if args.demo_store else inputs / f"demos_{n_demos(base)}.zarr"
    obs = run_obs(args)
    # the critic input where the policy sees images: the frozen policy encoder's features
    critic = ("critic.features=encoder",) if args.cameras else ()
    had = shares_used(out)  # a folder's runs compare at one set of shares
    if had is not None and had != args.shares:
        raise SystemExit(f"bench_habc: the runs in {out} used --shares {','.join(map(str, had))}, not "
                         f"{','.join(map(str, args.shares))}: pass another --out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "shares.json").write_text(json.dumps(list(args.shares)))
    v0 = out / "v0_eval"
    evaluate(ckpt, v0, args.eval_episodes, 100_000, args.task, obs=obs)
    for seed in [int(s) for s in args.seeds.split(",")]:
        for setting in args.settings.split(","):
            for name in args.methods.split(","):
                if name in (CORRECTION_ONLY if setting == "autonomous" else AUTONOMOUS_ONLY):
                    continue
                run_dir = out / "runs" / setting / name / f"seed{seed}"
                rec = run_dir / "records.json"
                if rec.exists() and len(json.loads(rec.read_text())) == args.iterations + 1:
                    continue
                (run_dir / "iter_00" / "eval").mkdir(parents=True, exist_ok=True)
                shutil.copy(v0 / "summary.json", run_dir / "iter_00" / "eval" / "summary.json")
                method, extra = METHODS[name]
                shares = share_overrides(name, setting, args.shares)
                refine_run(method, ckpt, demos, run_dir,
                           out / "logs" / f"{setting}_{name}_seed{seed}.log", seed=seed,
                           collect_seed_start=500_000 + 10_000 * seed, iterations=args.iterations,
                           episodes=args.episodes, eval_episodes=args.eval_episodes, train_steps=args.train_steps,
                           task=args.task, overrides=(shares, *SETTINGS[setting], *extra, *critic), obs=obs)


# (method, reference) pairs the report differences by seed; habc - sft is the headline
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=["prep", "run", "report", "diagnose"])
    ap.add_argument("--task", default="pick_place", help="prep/run/report: the task (pick_place's inputs come "
                    "from wm_candidates.py; another's from `prep`)")
    ap.add_argument("--demos", type=int, default=40, help="prep: the base's expert demos")
    ap.add_argument("--steps", default="1000,2000,3000", help="prep: the base's candidate checkpoints")
    ap.add_argument("--train-args", default="", help="prep: more `vla train` overrides for the base, space-separated "
                    "(stack3's: 'train.lr=1e-3 policy.noise_scale=0', the main job's recipe)")
    ap.add_argument("--run", default="autonomous/habc/seed1", help="diagnose: SETTING/METHOD/seedS")
    ap.add_argument("--inputs", default=None, help="default: runs/bench_wm/inputs (pick_place), "
                    "runs/bench_habc_TASK/inputs")
    ap.add_argument("--out", default=None, help="default: runs/bench_habc (pick_place), runs/bench_habc_TASK")
    ap.add_argument("--base", default="", help="the candidate every run starts from (default: the one `prep` "
                    f"chose, else {BASE})")
    ap.add_argument("--base-ckpt", default="", help="a checkpoint folder to start from instead of --base "
                    "(e.g. a refined policy; give it its own --out and --name)")
    ap.add_argument("--cameras", action="store_true", help="run/report: image observations from the task's cameras "
                    "instead of state (with a camera policy's --base-ckpt and --demo-store); the critics then read "
                    "the frozen policy encoder's features")
    ap.add_argument("--demo-store", default="", help="run/report: the demos the runs fine-tune on (default: the base's "
                    "inputs/demos_N.zarr)")
    ap.add_argument("--run-args", default="", help="run/report: more overrides of every evaluation and `vla refine` "
                    "run, space-separated (the camera run's: 'n_action_steps=4', the main job's re-planning)")
    ap.add_argument("--name", default="habc", help="report: benchmarks/results/NAME.md, _curves.png, _raw/")
    ap.add_argument("--json", default="", help="report: benchmarks/results/JSON.json (default NAME); the task's "
                    "entry is replaced, other tasks' kept")
    ap.add_argument("--json-task", default="", help="report: the task's key in the JSON (default: --task); another "
                    "key keeps the entry of runs from another base")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--settings", default="autonomous,interventions")
    ap.add_argument("--methods", default="habc,sft,habc_single,rac,hg_dagger")
    ap.add_argument("--shares", default=",".join(map(str, SHARES)), help="run/report: the fixed sample shares "
                    "demo,correction,policy (an empty group's share goes to the others in proportion)")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--train-steps", type=int, default=500)
    args = ap.parse_args()
    pp = args.task == "pick_place"
    args.inputs = args.inputs or ("runs/bench_wm/inputs" if pp else f"runs/bench_habc_{args.task}/inputs")
    args.out = args.out or ("runs/bench_habc" if pp else f"runs/bench_habc_{args.task}")
    raw = args.shares
    try:
        args.shares = tuple(float(x) for x in raw.split(","))
    except ValueError:
        args.shares = ()
    if len(args.shares) != 3 or min(args.shares) < 0 or abs(sum(args.shares) - 1) > 1e-6:
        ap.error(f"--shares: three non-negative numbers demo,correction,policy that sum to 1, got '{raw}'")
    if args.phase in ("report", "diagnose"):
        from habc_report import diagnose, report

        {"report": report, "diagnose": diagnose}[args.phase](args)
    else:
        {"prep": prep, "run": run}[args.phase](args)


if __name__ == "__main__":
    main()
