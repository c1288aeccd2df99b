"""The refinement redesign changed no behaviour: every method (18 settings) runs one tiny round with
the code before the redesign and with today's, and the two must agree bit for bit.

  git worktree add /tmp/old 6393248          # the last commit before methods became units
  E=$PWD/experiments/refine_equivalence.py
  (cd /tmp && PYTHONPATH=/tmp/old OMP_NUM_THREADS=1 python $E --root /tmp/eq/old)   # the old code first on the path
  (cd /tmp && OMP_NUM_THREADS=1 python $E --root /tmp/eq/new --new)
  python experiments/refine_equivalence.py --compare /tmp/eq/old /tmp/eq/new
Each case writes digest.json: records and train_info (no timings), the sha256 of the fine-tuned
checkpoint's files and, for DSRL, of the actor's tensors and metadata. `--new` spells the settings
as today's config does (method_args.*, critic.*). Result: experiments/refine_equivalence.txt.
OMP_NUM_THREADS=1 is part of the comparison, not a speed setting: torch's matrix products split their
sums by thread, so the instruction encoder's embeddings (and every weight trained after them) differ in
the last bits between one thread and two. Both sides must run with the same count.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")

WM = {"wm_preset": "debug", "wm_steps": 4, "wm_overrides": ["model.probe_dims=[9,10,11]"]}
# name: (method, old overrides, new overrides, method_args)
CASES = {
    "habc": ("habc", [], [], None),
    "habc_gated": ("habc", ["habc.outcome_gate=true", "habc.beta=2.0", "habc.adv_lambda=1.0"],
                   ["method_args.outcome_gate=true", "method_args.beta=2.0", "method_args.adv_lambda=1.0"], None),
    "habc_sampled": ("habc", ["habc.sample_by_weight=true"], ["method_args.sample_by_weight=true"], None),
    "habc_nomask_single": ("habc", ["habc.mask_interventions=false", "habc.single_critic=true"],
                           ["method_args.mask_interventions=false", "method_args.single_critic=true"], None),
    "habc_auto": ("habc", ["intervener=''", "group_shares={demo: 0.5, policy: 0.5}", "own_chunk_only=true"],
                  ["intervener=''", "method_args.group_shares={demo: 0.5, policy: 0.5}", "own_chunk_only=true"], None),
    "awr": ("awr", [], [], None),
    "sft": ("sft", [], [], None),
    "filtered_bc": ("filtered_bc", [], [], None),
    "rac": ("rac", [], [], None),
    "hg_dagger": ("hg_dagger", [], [], None),
    "hg_dagger_control": ("hg_dagger", ["group_shares={demo: 1.0}"], ["method_args.group_shares={demo: 1.0}"], None),
    "dagger": ("dagger", [], [], None),
    "pa_rl": ("pa_rl", [], [], {"samples": 3, "states": 5, "chunk": 4}),
    "dsrl": ("dsrl", [], [], {"hidden": 16, "utd": 2, "batch_size": 8}),
    "imagination": ("imagination", [], [], {**WM, "refit_steps": 2, "starts": 4, "samples": 3, "chunks": 2}),
    "imagination_control": ("imagination", [], [], {**WM, "imagine": False, "real_weight": 1.0}),
    "reguide_ft": ("reguide_ft", [], [], {**WM, "scale": 5.0, "phases": {"clusters": 6, "prototypes": 50}}),
    "reguide_fs": ("reguide_fs", [], [], {**WM, "fs_steps": 3, "guide": False}),
}
DROP = ("seconds", "train_seconds", "seconds_to_success")


def clean(x):
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items() if not any(d in k for d in DROP)}
    if isinstance(x, list):
        return [clean(v) for v in x]
    return x


def inputs(root: Path) -> tuple[Path, Path]:
    import torch

    from sim.evaluate import EvalConfig, run_evaluation
    from vla.config import load_config
    from vla.data.store import EpisodeStore
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    demos, ckpt = root / "demos.zarr", root / "policy"
    if not demos.exists():
        run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=3, seed_range="collect", workers=1,
                                  videos=0, obs_mode="state", cameras=[], record=str(demos), source="demo",
                                  horizon=80, out_dir=str(root / "collect")), progress=False)
    if not ckpt.exists():
        store = EpisodeStore.open(demos)
        stats = store.stats(keys=["state", "action"])
        cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1",
                                                           "expert_layers=1"],
                          values={"cameras": [], "state_dim": store.schema.state_dim, "action_dim": 7})
        torch.manual_seed(0)
        save_checkpoint(ckpt, VLAModel(cfg, stats), stats)
    return ckpt, demos


def run_case(root: Path, name: str, new: bool) -> None:
    import torch

    from vla.config import load_config
    from vla.refine.config import RefineConfig
    from vla.refine.loop import RefineRun

    out = root / name
    if (out / "digest.json").exists():
        return
    ckpt, demos = inputs(root)
    method, old_o, new_o, margs = CASES[name]
    values = {"method": method, "ckpt": str(ckpt), "demos": str(demos), "out_dir": str(out), "horizon": 40,
              "episodes_per_iteration": 3, "eval_episodes": 3, "intervener_args": {"subtask_timeout": 8}}
    if margs is not None:
        values["method_args"] = margs
    torch.manual_seed(0)
    cfg = load_config(RefineConfig, "refine", "debug", list(new_o if new else old_o), values=values)
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    info_f = out / "iter_01" / "train_info.json"
    digest = {"records": clean(rows), "train_info": clean(json.loads(info_f.read_text())) if info_f.exists() else None}
    ck = sorted((out / "iter_01" / "train" / "checkpoints").glob("step_*")) if (out / "iter_01" / "train").exists() \
        else []
    if ck:
        digest["weights_sha"] = {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
                                 for f in sorted(ck[-1].glob("*.safetensors"))}
    actor = out / "iter_01" / "dsrl" / "actor.safetensors"
    if actor.exists():  # the tensors and metadata, not the file: safetensors orders its metadata freely
        from safetensors import safe_open

        h = hashlib.sha256()
        with safe_open(str(actor), "np") as f:
            h.update(json.dumps(f.metadata(), sort_keys=True).encode())
            for k in sorted(f.keys()):
                h.update(k.encode() + f.get_tensor(k).tobytes())
        digest["actor_sha"] = h.hexdigest()
    (out / "digest.json").write_text(json.dumps(digest, indent=1, sort_keys=True))
    print(name, "done", flush=True)


def compare(a: Path, b: Path) -> int:
    bad = 0
    for name in CASES:
        fa, fb = a / name / "digest.json", b / name / "digest.json"
        if not (fa.exists() and fb.exists()):
            print(f"{name}: missing {'old' if not fa.exists() else 'new'}")
            bad += 1
            continue
        da, db = json.loads(fa.read_text()), json.loads(fb.read_text())
        for r in da["records"]:  # the record key was renamed with the redesign
            if "imagined_episodes" in r:
                r["added_episodes"] = r.pop("imagined_episodes")
        if da == db:
            print(f"{name}: identical")
            continue
        bad += 1
        print(f"{name}: DIFFERENT")
        for k in sorted(set(da) | set(db)):
            if da.get(k) != db.get(k):
                print(f"  {k}:\n    old {json.dumps(da.get(k))[:600]}\n    new {json.dumps(db.get(k))[:600]}")
    return bad


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path)
    ap.add_argument("--new", action="store_true")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--compare", nargs=2, type=Path)
    a = ap.parse_args()
    if a.compare:
        sys.exit(1 if compare(*a.compare) else 0)
    a.root.mkdir(parents=True, exist_ok=True)
    for n in a.cases.split(","):
        run_case(a.root, n, a.new)
