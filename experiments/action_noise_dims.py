"""Which of the action's dimensions does the `action_noise` perturbation hurt through, and does the policy hold
the hand upright? (issue 61; robustness_training.md, t_g07pcr)

Evaluates CKPT as `vla eval ... perturb=action_noise:SEV` with the noise kept on some dimensions only
(translation 0-2, tilt 3-4, yaw 5), paired on the same seeds with a clean evaluation, and logs the hand's tilt
(the angle between its axis and straight down) at every step. The restriction is a patch of
`vla.perturb.Perturber.action` loaded through a `sitecustomize` in each evaluation worker (the evaluator runs its
episodes in subprocesses), so nothing in the stack changes for it; the tilt log patches `NativeArmEnv.step` the
same way.

    python experiments/action_noise_dims.py runs/s14/job_a/refine/iter_02/train/checkpoints/step_00000500 \
        --out runs/s16/dims --episodes 200
    python experiments/action_noise_dims.py expert --out runs/s16/dims_expert --episodes 30 --only tilt \
        --extra expert_gain=0.7

`--right-tilt` (a diagnostic, not a controller the stack offers): every executed action's roll and pitch are
replaced by the expert's righting command from the hand's measured orientation, so the hand cannot tilt; the
groups `latency` and `realistic` run `action_latency:1` and the `realistic` preset instead of the noise:

    python experiments/action_noise_dims.py CKPT --out runs/s16/dims_right --only clean latency realistic --right-tilt

Prints success per group, the paired difference against clean (vla.metrics.paired_difference: 95% t interval)
and the mean tilt (degrees) by phase of the episode; writes OUT/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from sim.evaluate import seed_outcomes
from vla.metrics import paired_difference

GROUPS = {"clean": "", "all": "0,1,2,3,4,5,6", "translation": "0,1,2", "rotation": "3,4,5", "tilt": "3,4",
          "yaw": "5", "latency": "", "realistic": ""}
EXECUTION = ["seed_range=tune", "temporal_ensemble=0.3", "temporal_ensemble_every=2", "n_action_steps=4",
             "videos=0"]
PHASES = [(0, 10), (10, 30), (30, 60), (60, 100), (100, 10_000)]

SITECUSTOMIZE = '''
import os
import numpy as np

dims = os.environ.get("NOISE_DIMS")
if dims:
    import vla.perturb as P

    keep = [int(d) for d in dims.split(",")]
    plain = P.Perturber.action

    def action(self, action, low=-1.0, high=1.0):
        s = self.s("action_noise")
        if not s:
            return plain(self, action, low, high)
        a = np.array(action, np.float64, copy=True)
        noise = self.rng["action_noise"].normal(0.0, s * (high - low) / 2, len(a))
        mask = np.zeros(len(a))
        mask[[k for k in keep if k < len(a)]] = 1.0
        own = self.s
        self.s = lambda kind: 0.0 if kind == "action_noise" else own(kind)
        try:
            return plain(self, a + noise * mask, low, high)
        finally:
            del self.s

    P.Perturber.action = action

if os.environ.get("RIGHT_TILT"):
    from sim.experts.native import _rot_x_pi_then_yaw
    from sim.tasks.native import base as R
    from vla.robot.rotations import rotvec

    plain_apply = R.NativeArmEnv.step

    def righted(self, action):
        a = np.array(action, np.float64, copy=True)
        r = self.eef_mat()
        upright = _rot_x_pi_then_yaw(np.arctan2(r[1, 0], r[0, 0]))
        a[3:5] = np.clip(rotvec(upright @ r.T)[:2] / R.ROT_SCALE * 0.7, -1.0, 1.0)  # the job's expert gain
        return plain_apply(self, a)

    R.NativeArmEnv.step = righted

log = os.environ.get("TILT_LOG")
if log:
    from sim.tasks.native import base as B

    plain_step = B.NativeArmEnv.step

    def step(self, action):
        out = plain_step(self, action)
        tilt = float(np.arccos(np.clip(-self.eef_mat()[2, 2], -1.0, 1.0)))
        with open(f"{log}.{os.getpid()}", "a") as f:
            f.write(f"{self._t} {tilt:.5f}\\n")
        return out

    B.NativeArmEnv.step = step
'''


def successes(summary: Path) -> dict[int, bool]:
    return seed_outcomes(json.loads(summary.read_text()))


def tilt_by_phase(prefix: Path) -> dict[str, float]:
    rows = [np.loadtxt(f, ndmin=2) for f in prefix.parent.glob(prefix.name + ".*")]
    d = np.concatenate(rows) if rows else np.zeros((0, 2))
    out = {}
    for lo, hi in PHASES:
        m = (d[:, 0] > lo) & (d[:, 0] <= hi)
        out[f"steps_{lo}_{hi}"] = round(float(np.degrees(d[m, 1].mean())), 2) if m.any() else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpt", help="checkpoint folder, or expert")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--severity", type=float, default=0.02)
    ap.add_argument("--only", nargs="*", default=list(GROUPS), choices=list(GROUPS))
    ap.add_argument("--extra", nargs="*", default=[], help="more key=value overrides for vla eval")
    ap.add_argument("--right-tilt", action="store_true", help="the executed roll and pitch right the hand (diagnostic)")
    args = ap.parse_args()
    patch = args.out / "patch"
    patch.mkdir(parents=True, exist_ok=True)
    (patch / "sitecustomize.py").write_text(SITECUSTOMIZE)
    vla = str(Path(sys.executable).with_name("vla"))
    groups = ["clean"] + [g for g in args.only if g != "clean"]
    results: dict[str, dict] = {}
    for g in groups:
        out = args.out / g
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(patch.resolve()), os.environ.get("PYTHONPATH", "")]),
                   NOISE_DIMS=GROUPS[g], TILT_LOG=str((args.out / f"tilt_{g}").resolve()),
                   RIGHT_TILT="1" if args.right_tilt else "")
        if not (out / "summary.json").exists():
            for old in args.out.glob(f"tilt_{g}.*"):
                old.unlink()
            perturb = {"clean": "none", "latency": "action_latency:1", "realistic": "realistic"}.get(
                g, f"action_noise:{args.severity:g}")
            subprocess.run([vla, "eval", args.ckpt, f"episodes={args.episodes}", *EXECUTION, *args.extra,
                            f"perturb={perturb}", f"out_dir={out}"], env=env, check=True,
                           stdout=subprocess.DEVNULL)
        results[g] = {"success": float(np.mean(list(successes(out / "summary.json").values()))),
                      "tilt_deg": tilt_by_phase(args.out / f"tilt_{g}")}
    base = successes(args.out / "clean" / "summary.json")
    for g in groups[1:]:
        results[g]["minus_clean"] = paired_difference(base, successes(args.out / g / "summary.json"))
    for g, r in results.items():
        diff = r.get("minus_clean")
        print(f"{g:12s} {r['success']:.3f}" + (f"  {diff['mean']:+.3f} [{diff['lo']:+.3f}, {diff['hi']:+.3f}]"
                                               if diff else "") + f"  tilt {r['tilt_deg']}")
    (args.out / "results.json").write_text(json.dumps({"ckpt": args.ckpt, "severity": args.severity,
                                                       "episodes": args.episodes, "groups": results}, indent=1))


if __name__ == "__main__":
    main()
