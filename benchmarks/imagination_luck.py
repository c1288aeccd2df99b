"""Is a chunk that beat the deployed one under the oracle better, or lucky? (issue 63)

The oracle with `oracle_continuation=deployed` supervises a sampled chunk only where it succeeded and the
policy's own chunk failed, each followed by the noise-free policy to the horizon: one deterministic
continuation each. If the outcome at those starts hangs on details no policy controls (a grasp on the edge),
the chosen chunk won by luck, and supervising it teaches noise. This replays every chunk an oracle run
supervised, and the deployed chunk from the same start, under `--continuations` continuations that differ
a little (the same policy sampled at `--noise`), and compares their success: a real improvement keeps most of
its lead, luck keeps none. The first row is the check that the replay reproduces the run (the continuation
noise-free, one each: the chosen chunk succeeds and the deployed one fails, by construction).

    R=runs/s28/im/imt/runs
    python benchmarks/imagination_luck.py $R/oracle_q_nat/seed10 $R/oracle_q_nat/seed11 $R/oracle_q_nat/seed12 \
        $R/oracle_q_dense/seed10 --out runs/s29/luck.json --name imagination_luck
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np


class FixedChunk:
    """A batch policy that plays one given chunk (a recorded imagined episode's actions)."""

    def __init__(self, actions: np.ndarray, size: int) -> None:
        pad = np.repeat(actions[-1:], max(0, size - len(actions)), 0)
        self.chunk = np.concatenate([actions, pad])[:size].astype(np.float32)

    def sample_chunk(self, obs_batch: list, prefix: object = None, guidance: object = None) -> np.ndarray:
        return np.repeat(self.chunk[None], len(obs_batch), 0)


def supervised_starts(run: Path) -> list[dict[str, Any]]:
    """Every chunk the run supervised: its store episode, the real start it was sampled at (found by its first
    state among the run's rollouts of the same seed), its actions and the policy version that sampled it."""
    from vla.data.store import EpisodeStore

    out = []
    with EpisodeStore.open(run / "store.zarr") as store:
        t = store.table()
        for added in sorted(run.glob("iter_*/added.json")):
            for e in json.loads(added.read_text())["episodes"]:
                a, b = int(t.episode_starts[e]), int(t.episode_ends[e])
                first = store.read("state", a, a + 1)[0]
                version = int(store.read("policy_version", a, a + 1)[0])
                found = None
                for r in np.flatnonzero((t.seed == t.seed[e]) & (np.asarray(t.source) == "rollout")):
                    s = store.read("state", int(t.episode_starts[r]), int(t.episode_ends[r]))
                    hit = np.flatnonzero(np.abs(s - first).max(1) < 1e-6)
                    if len(hit):
                        found = (int(r), int(hit[0]))
                        break
                if found is None:
                    raise ValueError(f"{run}: imagined episode {e}'s first state is in none of its seed's rollouts")
                out.append({"imagined": int(e), "episode": found[0], "step": found[1], "version": version,
                            "actions": store.read("action", a, b), "instruction": str(t.instruction[found[0]]),
                            "state": first, "real_success": bool(t.success[found[0]])})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", help="oracle refine runs (bench_imagination's runs/<arm>/seed<N>), "
                    "their supervised chunks pooled")
    ap.add_argument("--continuations", type=int, default=8)
    ap.add_argument("--noise", type=float, default=0.1, help="the continuation policy's flow-prior noise scale")
    ap.add_argument("--chunks", type=int, default=25, help="look-ahead in chunks, as the run's oracle_chunks")
    ap.add_argument("--chunk", type=int, default=8, help="actions a chunk executes (the run's world model's chunk)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N supervised chunks (0: all)")
    ap.add_argument("--out", type=Path, required=True, help="the whole record, every chunk's row; an existing one "
                    "of the same runs and settings is read instead of simulating again")
    ap.add_argument("--name", default="", help="also write the figures to benchmarks/results/<name>.json")
    args = ap.parse_args()
    settings = {"runs": [str(r) for r in args.runs], "continuations": args.continuations,
                "continuation_noise": args.noise, "look_ahead_chunks": args.chunks, "limit": args.limit}
    earlier = json.loads(args.out.read_text()) if args.out.exists() else {}
    if all(earlier.get(k) == v for k, v in settings.items()):
        summary = earlier
    else:
        summary = measure(args, settings)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=1))
    figures = {k: v for k, v in summary.items() if k != "rows"}
    print(json.dumps(figures, indent=1))
    if args.name:
        from results_io import write_result  # benchmarks/ is this script's folder

        figures["per_chunk"] = [{k: r[k] for k in ("run", "step", "version", "perturbed_chosen", "perturbed_deployed")}
                                for r in summary["rows"]]
        write_result(args.name, figures, seed_range="tune", key_figures=["perturbed_chosen_minus_deployed"])


def measure(args: argparse.Namespace, settings: dict[str, Any]) -> dict[str, Any]:
    from vla.metrics import t_interval
    from vla.train.trainer import latest_checkpoint
    from worldmodel.imagined_env import StartStates
    from worldmodel.oracle import simulate
    from worldmodel.rank import load_candidate

    chunk = args.chunk
    rows = [(run, r) for run in args.runs for r in supervised_starts(run)]
    rows = rows[:args.limit] if args.limit else rows

    configs = {run: json.loads((run / "config.json").read_text()) for run in args.runs}
    loaded: dict[tuple[Path, float | None], Any] = {}

    def policy(run: Path, v: int, noise: float | None) -> Any:
        """Version v of a run at a noise scale (None: its own), loaded once: simulate reseeds it at every start."""
        ckpt = Path(configs[run]["ckpt"]) if v == 0 else latest_checkpoint(run / f"iter_{v:02d}" / "train")
        if (ckpt, noise) not in loaded:
            loaded[ckpt, noise] = load_candidate(ckpt, noise_scale=noise)
        return loaded[ckpt, noise]

    results = []
    for i, (run, r) in enumerate(rows):
        start = StartStates(r["state"][None].astype(np.float32), None, [r["instruction"]], np.array([r["episode"]]),
                            np.array([r["step"]]), np.array([r["real_success"]]))
        deployed = policy(run, r["version"], None)
        row: dict[str, Any] = {"run": str(run), **{k: r[k] for k in ("imagined", "episode", "step", "version")}}
        for name, n, noise in (("exact", 1, None), ("perturbed", args.continuations, args.noise)):
            after = policy(run, r["version"], noise)
            for which, first in (("chosen", FixedChunk(r["actions"], chunk)), ("deployed", deployed)):
                res = simulate(configs[run]["task"], run / "store.zarr", start, n, args.chunks, chunk, first, seed=i,
                               continuation=after, sampled_chunks=1)
                row[f"{name}_{which}"] = float(res["success"].mean())
        results.append(row)
        print(f"{i + 1}/{len(rows)} {row}", flush=True)
    ex_c, ex_d = (np.array([x[f"exact_{w}"] for x in results]) for w in ("chosen", "deployed"))
    pe_c, pe_d = (np.array([x[f"perturbed_{w}"] for x in results]) for w in ("chosen", "deployed"))
    diff = pe_c - pe_d
    lo, hi = t_interval(diff) if len(diff) > 1 else (float("nan"), float("nan"))
    return {**settings, "chunks": len(results), "exact_reproduced": float(np.mean((ex_c == 1) & (ex_d == 0))),
            "perturbed_chosen": float(pe_c.mean()), "perturbed_deployed": float(pe_d.mean()),
            "perturbed_chosen_minus_deployed": {"mean": float(diff.mean()), "lo": lo, "hi": hi,
                                                "better": int((diff > 0).sum()), "worse": int((diff < 0).sum())},
            "rows": results}


if __name__ == "__main__":
    main()
