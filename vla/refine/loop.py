"""The refinement loop behind `vla refine`: evaluate -> collect with the intervener -> fine-tune.

Iteration k (policy version k; version 0 is the pretrained checkpoint):
1. evaluate version k on the fixed evaluation seeds (no intervener) -> `iter_k/eval/summary.json`;
2. collect `episodes_per_iteration` rollouts of version k in parallel sim workers with the
   scripted intervener (`rac` for RaC, `hg_dagger` for everything else), recorded to the run's
   store with `is_intervention`, `is_recovery` and `policy_version = k`;
3. fit the method's critics if it has any (HABC, AWR) and fine-tune version k on the whole store
   with the method's per-step loss and sampling weights (`vla.refine.weights`) -> version k + 1.
After the last round the final version is evaluated. Each step leaves a file behind that marks it
done (summary JSON, episodes in the store by seed, a training checkpoint with its step), so an
interrupted run continues where it stopped: `vla refine ... --resume` (same out_dir).

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
import torch

from vla.data.store import EpisodeStore
from vla.refine import habc_math as hm
from vla.refine import weights as rw
from vla.refine.config import RefineConfig
from vla.refine.critics import train_critics
from vla.refine.features import step_features
from vla.refine.labels import StepLabels, build_step_labels
from vla.registry import EVALUATORS


class RefineRun:
    def __init__(self, cfg: RefineConfig, progress: bool = True) -> None:
        cfg.validate()
        from vla.refine.plugin import make_plugin

        self.cfg, self.progress = cfg, progress
        self.plugin = make_plugin(cfg)
        self.out = Path(cfg.out_dir)
        self.store_path = self.out / "store.zarr"

    # ------------------------------------------------------------------ paths and state
    def policy_path(self, version: int) -> Path:
        if version == 0:
            return Path(self.cfg.ckpt)
        from vla.train.trainer import latest_checkpoint

        ckpt = latest_checkpoint(self.out / f"iter_{version:02d}" / "train")
        steps = self.plugin.train_steps(self) if hasattr(self.plugin, "train_steps") else self.cfg.train.steps
        if ckpt is None or json.loads((ckpt / "train_state.json").read_text())["step"] < steps:
            raise FileNotFoundError(f"policy version {version} is not trained yet")
        return ckpt

    def version_policy(self, version: int) -> str:
        """The policy spec that evaluates version k: its checkpoint, or what a plug-in's versions are
        (DSRL's: the frozen base steered by the actor trained for k)."""
        if self.plugin is not None and hasattr(self.plugin, "version_policy"):
            return str(self.plugin.version_policy(self, version))
        return str(self.policy_path(version))

    def _trained(self, version: int) -> bool:
        if self.plugin is not None and hasattr(self.plugin, "trained"):
            return bool(self.plugin.trained(self, version))
        try:
            self.policy_path(version)
            return True
        except FileNotFoundError:
            return False

    def _eval_kwargs(self) -> dict[str, Any]:
        c = self.cfg
        return {"task": c.task, "workers": c.workers, "n_action_steps": c.n_action_steps,
                "temporal_ensemble": c.temporal_ensemble, "temporal_ensemble_every": c.temporal_ensemble_every,
                "cameras": c.cameras,
                "image_size": c.image_size, "horizon": c.horizon, "obs_mode": c.obs_mode, "backend": c.backend,
                "ray_address": c.ray_address}

    def _collect_kwargs(self) -> dict[str, Any]:
        kw = self._eval_kwargs()
        if self.cfg.collect_temporal_ensemble is not None:
            kw["temporal_ensemble"] = self.cfg.collect_temporal_ensemble
        return kw

    def collect_seeds(self, version: int) -> list[int]:
        return self.cfg.collect_seeds(version)

    # ------------------------------------------------------------------ steps
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
        self.collect_real(version)
        if self.plugin is not None:
            self.plugin.after_collect(self, version)

    def collect_real(self, version: int) -> None:
        store = EpisodeStore.open(self.store_path)
        table = store.table()
        have = set(table.seed[(table.source != "demo") & (table.source != "imagined")].tolist())
        store.close()
        missing = [s for s in self.collect_seeds(version) if s not in have]
        if not missing:
            return
        mode = self.plugin.collection_mode if self.plugin is not None else rw.COLLECTION_MODE[self.cfg.method]
        if self.cfg.intervener is not None:  # e.g. "" for HABC's autonomous setting: outcomes only
            mode = self.cfg.intervener
        policy, source = self.version_policy(version), "rollout"
        if self.plugin is not None and hasattr(self.plugin, "collect_policy"):
            policy, source = self.plugin.collect_policy(self, version, policy)
        EVALUATORS.get("sim_episodes")(
            progress=self.progress, policy=policy, episodes=len(missing), seeds=missing,
            seed_range="collect", videos=0, record=str(self.store_path), source=source, policy_version=version,
            intervener=mode, intervener_args=dict(self.cfg.intervener_args),
            label="expert" if self.cfg.method == "dagger" else "noisy",
            out_dir=str(self.out / f"iter_{version:02d}" / "collect"), **self._collect_kwargs())

    def habc_critic(self, version: int, store: EpisodeStore, model: torch.nn.Module
                    ) -> tuple[torch.nn.Module, torch.Tensor, StepLabels, dict[str, float]]:
        """HABC's critics fitted for fine-tuning version `version` (the labels of its own segments,
        the features the config names): (critic, per-step features, labels, fit figures)."""
        c, h = self.cfg, self.cfg.habc
        table = store.table()
        labels = build_step_labels(store, gamma=h.gamma, current_version=version if h.current_version_only else None)
        if not h.mask_interventions:
            labels = rw.outcome_only_labels(labels, np.asarray(table.success, bool),
                                            np.asarray(table.source == "demo"), h.gamma)
        feats = step_features(h.features, store, model)
        critic, losses = train_critics(feats, torch.from_numpy(labels.viability),
                                       torch.from_numpy(labels.viability_mask), torch.from_numpy(labels.efficiency),
                                       torch.from_numpy(labels.efficiency_mask), h, seed=c.seed + version,
                                       episode=torch.from_numpy(labels.episode),
                                       next_index=torch.from_numpy(labels.next_index), gamma=h.gamma)
        return critic, feats, labels, losses

    def step_weights(self, version: int, model: torch.nn.Module) -> tuple[rw.StepWeights, dict[str, float]]:
        """The method's loss / sampling weights over the store, fitting its critic first if any."""
        if self.plugin is not None:
            return self.plugin.step_weights(self, version, model)
        c = self.cfg
        store = EpisodeStore.open(self.store_path)
        table = store.table()
        success = np.asarray(table.success, bool)
        is_demo = np.asarray(table.source == "demo")
        info: dict[str, float] = {}
        critic_weight = None
        if c.method == "habc":
            h = c.habc
            critic, feats, labels, losses = self.habc_critic(version, store, model)
            from vla.refine.critics import habc_weights

            out = habc_weights(critic, feats, torch.from_numpy(labels.next_index),
                               torch.from_numpy(labels.done_success), torch.from_numpy(~labels.policy_step), h,
                               scale_rows=torch.from_numpy(labels.policy_step), adv_lambda=h.adv_lambda)
            critic_weight = out["weight"].numpy()
            pol = labels.policy_step
            if h.outcome_gate:  # method_weights reads the critic's weights on the policy's steps only
                keep = pol & hm.run_success(pol, labels.next_index, labels.done_success)
                critic_weight = hm.gated_weights(out["advantage"].numpy(), keep, h.beta, h.w_max)
            info = {**losses, "policy_weight_mean": float(critic_weight[pol].mean()) if pol.any() else 0.0,
                    "gate_mean": float(out["gate"].numpy()[pol].mean()) if pol.any() else 0.0,
                    # how many of the policy's steps the weights really train on (filtered BC: its
                    # successful steps' share)
                    "policy_effective_share": hm.effective_share(critic_weight, pol)}
        else:
            labels = build_step_labels(store)
            if c.method == "awr":
                a = c.awr
                returns = rw.mc_returns(labels, success, a.gamma)
                rollout = (labels.episode >= 0) & ~is_demo[np.where(labels.episode >= 0, labels.episode, 0)]
                feats = step_features(a.features, store, model)
                ones = torch.from_numpy(rollout)
                critic, losses = train_critics(feats, torch.from_numpy(returns), torch.zeros_like(ones),
                                               torch.from_numpy(returns), ones, a, seed=c.seed + version,
                                               episode=torch.from_numpy(labels.episode))
                with torch.no_grad():
                    _, values = critic.forward_heads((feats - critic.feature_mean) / critic.feature_std)
                critic_weight = rw.awr_weights(returns, values.numpy(), a.beta, a.w_max)
                info = {"value_loss": losses["efficiency_loss"], "value_val_mae": losses["val_efficiency_mae"],
                        "rollout_weight_mean": float(critic_weight[rollout].mean()) if rollout.any() else 0.0}
        w = rw.method_weights(c.method, labels, success, is_demo, critic_weight=critic_weight, demo_share=c.share(),
                              demo_weight=c.habc.demo_weight if c.method == "habc" else 1.0,
                              group_shares=c.group_shares or None)
        groups = rw.step_groups(labels, is_demo)
        info.update(rw.group_weight_stats(w, groups))  # the critic's weights, before any move to the sampler
        if c.method == "habc" and c.habc.sample_by_weight:
            w = rw.sample_by_loss(w, groups)
        info["supervised_steps"] = float((w.loss > 0).sum())
        return w, info

    def train(self, version: int) -> dict[str, Any]:
        """Fine-tune version `version` into version + 1 (resumes an interrupted fine-tuning)."""
        from vla.data.dataset import WindowDataset
        from vla.policy.checkpoint import load_model
        from vla.train.trainer import Trainer, latest_checkpoint, resolve_device

        c = self.cfg
        out = self.out / f"iter_{version + 1:02d}"
        if self.plugin is not None and hasattr(self.plugin, "train_version"):  # versions that are not fine-tunes
            info = self.plugin.train_version(self, version)
            out.mkdir(parents=True, exist_ok=True)
            (out / "train_info.json").write_text(json.dumps(info, indent=1))
            return info
        model, stats = load_model(self.policy_path(version), use_ema=True, device=resolve_device(c.train.device))
        if c.freeze_vision:  # the optimiser takes only parameters that still require gradients
            model.vision.requires_grad_(False)
        t0 = time.perf_counter()
        w, info = self.step_weights(version, model)
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
        if self.plugin is not None and hasattr(self.plugin, "train_setup"):
            model, train_cfg = self.plugin.train_setup(self, version, model, train_cfg)
        trainer = Trainer(model, data, train_cfg, out / "train", stats)
        if latest_checkpoint(out / "train") is not None:
            trainer.resume()
        result = trainer.fit()
        losses = list(result.losses.values())
        info.update({"train_loss_first": losses[0] if losses else float("nan"),
                     "train_loss_last": losses[-1] if losses else float("nan"),
                     "train_seconds": time.perf_counter() - t0, "windows": float(len(data))})
        (out / "train_info.json").write_text(json.dumps(info, indent=1))
        return info

    # ------------------------------------------------------------------ the loop
    def run(self) -> list[dict[str, Any]]:
        self.check_inputs()
        self.prepare()
        for k in range(self.cfg.iterations + 1):
            self.evaluate(k)
            self.write_records()
            if k == self.cfg.iterations:
                break
            if not self._trained(k + 1):
                self.collect(k)
                self.train(k)
        return self.write_records()

    def records(self) -> list[dict[str, Any]]:
        table = EpisodeStore.open(self.store_path).table() if self.store_path.exists() else None
        rows = []
        for k in range(self.cfg.iterations + 1):
            f = self.out / f"iter_{k:02d}" / "eval" / "summary.json"
            if not f.exists():
                break
            s = json.loads(f.read_text())
            before = [x for j in range(k) for x in self.collect_seeds(j)]
            real = (table.source != "demo") & (table.source != "imagined") if table is not None else []
            collected = np.isin(table.seed, before) & real if table is not None else []
            info_file = self.out / f"iter_{k:02d}" / "train_info.json"
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
                # imagined episodes of iteration j carry seed -(j + 1) (worldmodel.imagination)
                "imagined_episodes": int(np.sum((table.source == "imagined") & (table.seed >= -k) & (table.seed < 0)))
                if table is not None else 0,
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
        lo = [r["success_rate"] - r["wilson95"][0] for r in rows]
        hi = [r["wilson95"][1] - r["success_rate"] for r in rows]
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
