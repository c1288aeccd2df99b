"""The refinement loop behind `vla refine`: evaluate -> collect -> add data -> make the next version.

Iteration k (policy version k; version 0 is the pretrained checkpoint):
1. evaluate version k on the fixed evaluation seeds (no intervener) -> `iter_k/eval/summary.json`;
2. collect `episodes_per_iteration` rollouts of version k in parallel sim workers as the method's
   collection rule says (the policy that acts, the scripted intervener, the episodes' source),
   recorded to the run's store with `is_intervention`, `is_recovery` and `policy_version = k`;
   then the method may add data of its own (`augment`: imagined episodes, re-ranked chunks);
3. make version k + 1: by default fine-tune version k on the whole store with the method's
   per-step loss and sampling weights (`weights`, fitting its critics if it has any).
A method is a unit (`vla.refine.method.RefineMethod`, one file each in vla/refine/methods/ or
worldmodel/) found by name in `vla.registry.REFINE_METHODS`; this loop knows none of them.
After the last round the final version is evaluated. Each step leaves a file behind that marks it
done (summary JSON, episodes in the store by seed, `added.json`, a training checkpoint with its
step), so an interrupted run continues where it stopped: `vla refine ... --resume` (same out_dir).

Curves: `records.json` (one row per evaluated version: success with its Wilson interval, env
episodes and intervention steps collected before it) and `curves.png`.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from vla.data.schema import EXECUTED
from vla.data.store import EpisodeStore
from vla.evaluation import settings
from vla.refine import weights as rw
from vla.refine.config import RefineConfig
from vla.refine.method import Added, RefineMethod, Rollouts
from vla.registry import EVALUATORS, REFINE_METHODS


def make_method(cfg: RefineConfig) -> RefineMethod:
    """The registered method `cfg.method`, built from the run's config (its `method_args` checked)."""
    return REFINE_METHODS.get(cfg.method)(cfg)


class RefineRun:
    def __init__(self, cfg: RefineConfig, progress: bool = True) -> None:
        cfg.validate()
        self.cfg, self.progress = cfg, progress
        self.method = make_method(cfg)
        self.out = Path(cfg.out_dir)
        self.store_path = self.out / "store.zarr"

    # ------------------------------------------------------------------ paths and state
    def policy_path(self, version: int) -> Path:
        if version == 0:
            return Path(self.cfg.ckpt)
        from vla.train.trainer import latest_checkpoint

        ckpt = latest_checkpoint(self.out / f"iter_{version:02d}" / "train")
        if ckpt is None or json.loads((ckpt / "train_state.json").read_text())["step"] < self.method.train_steps():
            raise FileNotFoundError(f"policy version {version} is not trained yet")
        return ckpt

    def version_policy(self, version: int) -> str:
        """The policy spec that evaluates version k: its checkpoint, or what the method says its versions
        are (e.g. a frozen base steered by something trained for k)."""
        return self.method.version_policy(self, version)

    def _eval_kwargs(self) -> dict[str, Any]:
        return settings(self.cfg)  # the evaluator takes the run's execution settings as they are

    def _collect_kwargs(self) -> dict[str, Any]:
        kw = self._eval_kwargs()
        if self.cfg.collect_temporal_ensemble is not None:
            kw["temporal_ensemble"] = self.cfg.collect_temporal_ensemble
        if self.cfg.collect_randomize != "none":
            kw["randomize"] = self.cfg.collect_randomize
        return kw

    def collect_seeds(self, version: int) -> list[int]:
        return self.cfg.collect_seeds(version)

    def check_inputs(self) -> None:
        """The store the run fine-tunes on against the checkpoint's policy, before anything is
        evaluated, collected or copied: demos of another action size used to pass a full evaluation
        and a copy into the run folder first, and then fail in collection with an unclear message."""
        from vla.policy.checkpoint import load_config as checkpoint_config

        policy = checkpoint_config(self.cfg.ckpt)
        # a resumed run trains on its own copy (the demos may have moved since)
        path = self.store_path if self.store_path.exists() else Path(self.cfg.demos)
        what = "the run's store" if path == self.store_path else "demos"
        if not (path / "zarr.json").exists():
            raise FileNotFoundError(f"{what}: {path} is not an EpisodeStore")
        with EpisodeStore.open(path) as store:
            schema = store.schema
        ckpt = f"the checkpoint {self.cfg.ckpt}"
        for key, have, need in (("action", schema.action_dim, policy.action_dim),
                                ("state", schema.state_dim, policy.state_dim)):
            if have != need:
                raise ValueError(f"{what} {path}: key '{key}' has size {have}, but {ckpt} has a policy with "
                                 f"{key}_dim {need} (use the demos the policy was trained on)")
        missing = [cam for cam in policy.cameras if cam not in schema.cameras]
        if missing:
            raise ValueError(f"{what} {path}: no key 'images/{missing[0]}' (its cameras: {list(schema.cameras)}), but "
                             f"{ckpt} has a policy that reads cameras {policy.cameras}")

    def prepare(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        config_file = self.out / "config.json"
        if not self.store_path.exists():
            src = Path(self.cfg.demos)
            if not (src / "zarr.json").exists():
                raise FileNotFoundError(f"demos: {src} is not an EpisodeStore")
            tmp = self.out / ".store.zarr.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(src, tmp)
            tmp.rename(self.store_path)  # a half-copied store is never mistaken for the run's store
        config_file.write_text(json.dumps(asdict(self.cfg), indent=1))

    def evaluate(self, version: int) -> dict[str, Any]:
        out = self.out / f"iter_{version:02d}" / "eval"
        summary_file = out / "summary.json"
        if summary_file.exists():
            return json.loads(summary_file.read_text())
        return EVALUATORS.get("sim_episodes")(
            progress=self.progress, policy=self.version_policy(version), episodes=self.cfg.eval_episodes,
            seed_range=self.cfg.eval_seed_range, seed_offset=self.cfg.eval_seed_offset, videos=self.cfg.videos,
            out_dir=str(out), **self._eval_kwargs())

    def collect(self, version: int) -> None:
        rollouts = self.collect_real(version)
        if self.added_file(version).exists():
            return
        added = self.method.augment(self, rollouts)
        if added is not None:
            self.added_file(version).write_text(json.dumps(added.to_json(), indent=1))

    def added_file(self, version: int) -> Path:
        return self.out / f"iter_{version:02d}" / "added.json"

    def added(self, version: int) -> Added:
        """What the method added to the store in round k beyond its real rollouts (empty if nothing)."""
        f = self.added_file(version)
        return Added.from_json(json.loads(f.read_text())) if f.exists() else Added()

    def collect_real(self, version: int) -> Rollouts:
        seeds = self.collect_seeds(version)
        out = self.out / f"iter_{version:02d}" / "collect"
        with EpisodeStore.open(self.store_path) as store:
            table = store.table()
        have = set(table.seed[np.isin(table.source, EXECUTED)].tolist())
        missing = [s for s in seeds if s not in have]
        if missing:
            col = self.method.collection(self, version)
            # the run's own intervener when it sets one, e.g. "" (no person: outcomes only)
            intervener = col.intervener if self.cfg.intervener is None else self.cfg.intervener
            EVALUATORS.get("sim_episodes")(
                progress=self.progress, policy=col.policy, episodes=len(missing), seeds=missing,
                seed_range="collect", videos=0, record=str(self.store_path), source=str(col.source),
                policy_version=version, intervener=intervener, intervener_args=dict(self.cfg.intervener_args),
                label=col.label, out_dir=str(out), **self._collect_kwargs())
            with EpisodeStore.open(self.store_path) as store:
                table = store.table()
        summary = out / "summary.json"
        episodes = np.flatnonzero(np.isin(table.seed, seeds) & np.isin(table.source, EXECUTED))
        return Rollouts(version=version, episodes=episodes,
                        summary=json.loads(summary.read_text()) if summary.exists() else {})

    def finetune(self, version: int) -> dict[str, Any]:
        """Fine-tune version `version` into version + 1 with the method's weights (resumes an
        interrupted fine-tuning)."""
        from vla.data.dataset import WindowDataset
        from vla.policy.checkpoint import load_model
        from vla.train.trainer import Trainer, latest_checkpoint, resolve_device

        c = self.cfg
        out = self.out / f"iter_{version + 1:02d}"
        model, stats = load_model(self.policy_path(version), use_ema=True, device=resolve_device(c.train.device))
        if c.freeze_vision:  # the optimiser takes only parameters that still require gradients
            model.vision.requires_grad_(False)
        t0 = time.perf_counter()
        w, info = self.method.weights(self, version, model, [self.added(k) for k in range(version + 1)])
        store = EpisodeStore.open(self.store_path)
        until = None
        if c.own_chunk_only:
            table = store.table()
            own = ~rw.demo_loss(table)[1] & ~np.asarray(store.read("is_intervention", 0, store.n_steps), bool)
            until = rw.executed_chunk_ends(table.episode_starts, table.episode_ends, own, c.n_action_steps)
        data = WindowDataset(store, obs_horizon=model.cfg.n_obs_steps, action_horizon=model.cfg.chunk_size,
                             cameras=model.cfg.cameras, loss_weights=w.loss, sample_weights=w.sample,
                             supervise_until=until)
        train_cfg = type(c.train)(**{**asdict(c.train), "seed": c.seed * 1000 + version})
        model, train_cfg = self.method.setup_training(self, version, model, train_cfg)
        trainer = Trainer(model, data, train_cfg, out / "train", stats)
        if latest_checkpoint(out / "train") is not None:
            trainer.resume()
        result = trainer.fit()
        losses = list(result.losses.values())
        info.update({"train_loss_first": losses[0] if losses else float("nan"),
                     "train_loss_last": losses[-1] if losses else float("nan"),
                     "train_seconds": time.perf_counter() - t0, "windows": float(len(data))})
        return info

    def train(self, version: int) -> dict[str, Any]:
        """Make version `version` + 1 as the method says (a fine-tune unless its versions are not)."""
        info = self.method.train(self, version)
        out = self.out / f"iter_{version + 1:02d}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "train_info.json").write_text(json.dumps(info, indent=1))
        return info

    # ------------------------------------------------------------------ the loop
    def run(self) -> list[dict[str, Any]]:
        self.check_inputs()
        self.prepare()
        for k in range(self.cfg.iterations + 1):
            if self.cfg.evaluates(k):
                self.evaluate(k)
                self.write_records()
            if k == self.cfg.iterations:
                break
            if not self.method.trained(self, k + 1):
                self.collect(k)
                self.train(k)
        return self.write_records()

    def records(self) -> list[dict[str, Any]]:
        table = EpisodeStore.open(self.store_path).table() if self.store_path.exists() else None
        rows = []
        for k in range(self.cfg.iterations + 1):
            f = self.out / f"iter_{k:02d}" / "eval" / "summary.json"
            if not f.exists():
                if self.cfg.evaluates(k):
                    break  # not evaluated yet: the rows end at the loop's progress
                continue  # trained, never measured (eval_every)
            s = json.loads(f.read_text())
            before = [x for j in range(k) for x in self.collect_seeds(j)]
            collected = np.isin(table.seed, before) & np.isin(table.source, EXECUTED) if table is not None else []
            info_file = self.out / f"iter_{k:02d}" / "train_info.json"
            # episodes the method added beyond its real rollouts (imagined, re-ranked) in each round before
            added = [len(self.added(j).episodes) for j in range(k)]
            rows.append({
                "method": self.cfg.method, "task": self.cfg.task, "seed": self.cfg.seed, "version": k,
                "success_rate": s["success_rate"], "successes": s["successes"], "episodes": s["episodes"],
                "wilson95": s["wilson95"], "length_mean": s["length_mean"],
                "steps_to_success": s.get("steps_to_success"), "seconds_to_success": s.get("seconds_to_success"),
                "env_episodes": int(np.sum(collected)),
                "intervention_steps": int(table.n_intervention_steps[collected].sum()) if table is not None else 0,
                "recovery_steps": int(table.n_recovery_steps[collected].sum()) if table is not None else 0,
                "collected_successes": int(table.success[collected].sum()) if table is not None else 0,
                # why the person stepped in during the rounds before this version (sim/intervener.py)
                "takeover_reasons": self.takeover_reasons(k),
                "added_episodes": sum(added), "added_per_round": added,
                "train": json.loads(info_file.read_text()) if info_file.exists() else None,
            })
        return rows

    def takeover_reasons(self, version: int) -> dict[str, int]:
        """Takeovers by reason over the collections of rounds 0 .. version - 1 (a real-robot round,
        whose summary has none, adds nothing)."""
        total: Counter[str] = Counter()
        for j in range(version):
            f = self.out / f"iter_{j:02d}" / "collect" / "summary.json"
            if f.exists():
                total.update(json.loads(f.read_text()).get("takeover_reasons", {}))
        return dict(sorted(total.items()))

    def write_records(self) -> list[dict[str, Any]]:
        rows = self.records()
        (self.out / "records.json").write_text(json.dumps(rows, indent=1))
        if rows:
            plot_run(rows, self.out / "curves.png")
        return rows


def plot_run(rows: list[dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, key, label in ((axes[0], "env_episodes", "env episodes collected"),
                           (axes[1], "intervention_steps", "intervention steps")):
        x = [r[key] for r in rows]
        y = [r["success_rate"] for r in rows]
        lo = [max(r["success_rate"] - r["wilson95"][0], 0.0) for r in rows]
        hi = [max(r["wilson95"][1] - r["success_rate"], 0.0) for r in rows]
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=4)
        ax.set_xlabel(label)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success rate (Wilson 95%)")
    fig.suptitle(f"{rows[0]['method']} on {rows[0]['task']} (seed {rows[0]['seed']})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
