"""`vla refine pa-rl`: Policy-Agnostic RL (PA-RL, Mark et al., arXiv 2412.06685) as the critic-based
baseline for an expressive policy, on HABC's critic (issue 15).

PA-RL improves any policy class with a critic: for dataset states it samples K actions from the
current policy, re-ranks them by Q, and distils the best into the policy by supervised learning.
Ours, per iteration k, after the loop's real rollouts of version k:
1. Q(s, chunk): HABC's critic (`vla.refine.critics`: ensemble, held-out early stopping, TD(lambda)
   viability targets on version k's own segments) with the executed chunk of `chunk` actions
   appended to the step's features - the same targets and machinery, in Q form;
2. up to `states` labelled steps of version k's rollouts: K = `samples` chunks of version k each,
   scored by the ensemble's mean viability (PA-RL's global re-ranking; its local gradient steps on
   the actions are left out: a flow policy's chunk is re-sampled, not optimised);
3. the best chunk of each state is written to the run's store as a one-window episode
   (source=imagined: never executed; the state repeated, the chunk as its actions) and the policy
   is fine-tuned on it with the demos and the corrections (`demo_share` of the samples).
Differs from the paper: Q is fitted by our TD(lambda) on sparse outcomes instead of Cal-QL/IQL, and
the candidates are action chunks.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.registry import REFINE_METHODS


@dataclass
class PaRlConfig:
    samples: int = 8  # candidate chunks per state
    states: int = 256  # states re-ranked per iteration
    chunk: int = 8  # actions of a candidate the critic sees (the executed part, n_action_steps)
    demo_share: float = 0.5  # share of samples from demos + corrections; the rest from re-ranked chunks

    def validate(self) -> None:
        if self.samples < 2 or self.states < 1 or self.chunk < 1:
            raise ValueError("method_args: samples must be >= 2, states and chunk >= 1")
        if not 0 <= self.demo_share < 1:
            raise ValueError(f"method_args.demo_share must be in [0, 1), got {self.demo_share}")


def executed_chunks(action: np.ndarray, next_index: np.ndarray, length: int) -> np.ndarray:
    """[N, length, A]: for each step the actions executed from it on (following `next_index`
    inside its episode; the episode's last action repeats past its end)."""
    idx = np.arange(len(action))
    out = np.empty((len(action), length, action.shape[1]), action.dtype)
    for j in range(length):
        out[:, j] = action[idx]
        idx = next_index[idx]
    return out


def best_chunks(scores: np.ndarray, samples: int) -> np.ndarray:
    """Index of the best candidate for each state: scores [states * samples] in state-major order."""
    return np.asarray(scores).reshape(-1, samples).argmax(1)


class PaRlMethod:
    collection_mode = "hg_dagger"  # HABC's protocol; `intervener=` gives the autonomous setting

    def __init__(self, cfg: Any) -> None:
        from vla.config import from_dict

        self.run_cfg = cfg
        self.cfg = from_dict(PaRlConfig, dict(cfg.method_args), "method_args")
        self.cfg.validate()

    def _file(self, run: Any, version: int) -> Path:
        return run.out / f"iter_{version:02d}" / "pa_rl.json"

    def after_collect(self, run: Any, version: int) -> None:
        done = self._file(run, version)
        if done.exists():
            return
        from vla.data.schema import Episode
        from vla.data.store import EpisodeStore
        from vla.policy.policy import load_policy
        from vla.refine.critics import train_critics
        from vla.refine.features import step_features
        from vla.refine.labels import build_step_labels

        c, h = self.cfg, self.run_cfg.habc
        # the proposals are the learnt distribution's, whatever noise_scale the checkpoint deploys with
        policy = load_policy(run.policy_path(version), seed=self.run_cfg.seed * 1000 + version, noise_scale=1.0)
        with EpisodeStore.open(run.store_path) as store:
            labels = build_step_labels(store, gamma=h.gamma, current_version=version)
            feats = step_features(h.features, store, policy.model)
            action = np.asarray(store.read("action", 0, store.n_steps), np.float32)
            state = np.asarray(store.read("state", 0, store.n_steps), np.float32)
            table = store.table()
            cams = list(policy.cfg.cameras)
            episode_of = labels.episode
        chunks = torch.from_numpy(executed_chunks(action, labels.next_index, c.chunk).reshape(len(action), -1))
        q, info = train_critics(torch.cat([feats, chunks], 1), torch.from_numpy(labels.viability),
                                torch.from_numpy(labels.viability_mask), torch.from_numpy(labels.efficiency),
                                torch.from_numpy(labels.efficiency_mask), h, seed=self.run_cfg.seed + version,
                                episode=torch.from_numpy(labels.episode),
                                next_index=torch.from_numpy(labels.next_index), gamma=h.gamma)
        rows = np.flatnonzero(labels.viability_mask)
        rng = np.random.default_rng([self.run_cfg.seed, version])
        if len(rows) > c.states:
            rows = np.sort(rng.choice(rows, c.states, replace=False))
        written, chosen_q, mean_q = [], [], []
        with EpisodeStore.open(run.store_path, mode="a") as store:
            for t in rows:
                obs = {"state": state[t], "instruction": str(table.instruction[episode_of[t]]),
                       "images": {cam: store.read(f"images/{cam}", int(t), int(t) + 1)[0] for cam in cams}}
                policy.reset(int(self.run_cfg.seed * 1_000_003 + t))
                cands = np.asarray(policy.sample_chunk([obs] * c.samples), np.float32)  # [K, H, A]
                x = torch.cat([feats[t].expand(c.samples, -1),
                               torch.from_numpy(cands[:, : c.chunk].reshape(c.samples, -1))], 1)
                with torch.no_grad():
                    logits, _ = q.forward_heads((x - q.feature_mean) / q.feature_std)
                p = torch.sigmoid(logits).numpy()
                best = int(best_chunks(p, c.samples)[0])
                chosen_q.append(float(p[best]))
                mean_q.append(float(p.mean()))
                n = cands.shape[1]
                steps = {"state": np.repeat(state[t][None], n, 0), "action": cands[best],
                         "reward": np.zeros(n, np.float32), "is_intervention": np.zeros(n, bool),
                         "is_recovery": np.zeros(n, bool), "policy_version": np.full(n, version, np.int32),
                         "timestamp": np.arange(n, dtype=np.float64) / store.schema.fps}
                for cam in cams:
                    steps[f"images/{cam}"] = np.repeat(obs["images"][cam][None], n, 0)
                written.append(store.append_episode(Episode(steps=steps, task=str(table.task[episode_of[t]]),
                                                            instruction=obs["instruction"], success=False,
                                                            source="imagined", seed=-(version + 1))))
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text(json.dumps({"episodes": written, "states": len(rows), "config": asdict(c),
                                    "chosen_q_mean": float(np.mean(chosen_q)) if chosen_q else None,
                                    "candidate_q_mean": float(np.mean(mean_q)) if mean_q else None,
                                    "critic": info}, indent=1))

    def step_weights(self, run: Any, version: int, model: torch.nn.Module) -> tuple[Any, dict[str, float]]:
        from vla.data.store import EpisodeStore
        from vla.refine.labels import build_step_labels
        from vla.refine.weights import StepWeights, group_sample_distribution

        with EpisodeStore.open(run.store_path) as store:
            table = store.table()
            labels = build_step_labels(store)
        loss = labels.demo.astype(np.float32)  # demos and corrections
        starts = np.zeros(len(loss), bool)
        n = 0
        for k in range(version + 1):  # re-ranked chunks of every iteration so far
            f = self._file(run, k)
            if f.exists():
                for e in json.loads(f.read_text())["episodes"]:
                    loss[table.episode_starts[e]:table.episode_ends[e]] = 1.0
                    starts[table.episode_starts[e]] = True  # one window: the state and its best chunk
                    n += 1
        groups = {"demo": labels.demo, "policy": starts}
        sample = group_sample_distribution(loss, groups, {"demo": self.cfg.demo_share,
                                                          "policy": 1 - self.cfg.demo_share})
        q = json.loads(self._file(run, version).read_text()) if self._file(run, version).exists() else {}
        critic = q.get("critic", {})
        return StepWeights(loss=loss, sample=sample), {
            "pa_rl_windows": float(n), "supervised_steps": float((loss > 0).sum()),
            "val_viability_auroc": critic.get("val_viability_auroc", float("nan")),
            "chosen_q_mean": q.get("chosen_q_mean") or float("nan"),
            "candidate_q_mean": q.get("candidate_q_mean") or float("nan")}


@REFINE_METHODS.register("pa_rl")
def make_pa_rl(cfg: Any) -> PaRlMethod:
    return PaRlMethod(cfg)


__all__ = ["PaRlConfig", "PaRlMethod", "best_chunks", "executed_chunks"]
