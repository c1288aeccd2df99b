"""`vla refine pa-rl`: Policy-Agnostic RL (PA-RL, Mark et al., arXiv 2412.06685) as the critic-based
baseline for an expressive policy, on HABC's critic.

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
   (source=proposed: never executed; the state repeated, the chunk as its actions, the seed of the
   episode the state came from) and the policy is fine-tuned on it with the demos and the
   corrections (`demo_share` of the samples).
Differs from the paper: Q is fitted by our TD(lambda) on sparse outcomes instead of Cal-QL/IQL, and
the candidates are action chunks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from vla.data.schema import Source
from vla.refine.method import Added, MethodArgs, RefineMethod, Rollouts, Run
from vla.refine.weights import StepWeights
from vla.registry import REFINE_METHODS


@dataclass
class PaRlArgs(MethodArgs):
    samples: int = 8  # candidate chunks per state
    states: int = 256  # states re-ranked per iteration
    chunk: int = 8  # actions of a candidate the critic sees (the executed part, n_action_steps)
    demo_share: float = 0.5  # share of samples from demos + corrections; the rest from re-ranked chunks
    gamma: float = 0.98  # the critic's discount (its labels and TD targets, as HABC's)

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


@REFINE_METHODS.register("pa_rl")
class PaRl(RefineMethod):
    Args = PaRlArgs
    args: PaRlArgs
    intervener = "hg_dagger"  # HABC's protocol; `intervener=` gives the autonomous setting

    def augment(self, run: Run, rollouts: Rollouts) -> Added:
        from vla.data.schema import Episode
        from vla.data.store import EpisodeStore
        from vla.policy.policy import load_torch_policy
        from vla.refine.critics import train_critics
        from vla.refine.features import step_features
        from vla.refine.labels import build_step_labels

        c, fit, version, seed = self.args, self.run_cfg.critic, rollouts.version, self.run_cfg.seed
        # the proposals are the learnt distribution's, whatever noise_scale the checkpoint deploys with
        policy = load_torch_policy(run.policy_path(version), seed=seed * 1000 + version, noise_scale=1.0)
        with EpisodeStore.open(run.store_path) as store:
            labels = build_step_labels(store, gamma=c.gamma, current_version=version)
            feats = step_features(fit.features, store, policy.model)
            action = np.asarray(store.read("action", 0, store.n_steps), np.float32)
            state = np.asarray(store.read("state", 0, store.n_steps), np.float32)
            table = store.table()
            cams = list(policy.cfg.cameras)
            episode_of = labels.episode
        chunks = torch.from_numpy(executed_chunks(action, labels.next_index, c.chunk).reshape(len(action), -1))
        q, info = train_critics(torch.cat([feats, chunks], 1), torch.from_numpy(labels.viability),
                                torch.from_numpy(labels.viability_mask), torch.from_numpy(labels.efficiency),
                                torch.from_numpy(labels.efficiency_mask), fit, seed=seed + version,
                                episode=torch.from_numpy(labels.episode),
                                next_index=torch.from_numpy(labels.next_index), gamma=c.gamma)
        rows = np.flatnonzero(labels.viability_mask)
        rng = np.random.default_rng([seed, version])
        if len(rows) > c.states:
            rows = np.sort(rng.choice(rows, c.states, replace=False))
        written, chosen_q, mean_q = [], [], []
        with EpisodeStore.open(run.store_path, mode="a") as store:
            for t in rows:
                ep = int(episode_of[t])
                obs = {"state": state[t], "instruction": str(table.instruction[ep]),
                       "images": {cam: store.read(f"images/{cam}", int(t), int(t) + 1)[0] for cam in cams}}
                policy.reset(int(seed * 1_000_003 + t))
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
                written.append(store.append_episode(Episode(steps=steps, task=str(table.task[ep]),
                                                            instruction=obs["instruction"], success=False,
                                                            source=Source.PROPOSED, seed=int(table.seed[ep]))))
        return Added(episodes=written, weights=[1.0] * len(written), first_window_only=True, info={
            "states": len(rows), "config": asdict(c), "critic": info,
            "chosen_q_mean": float(np.mean(chosen_q)) if chosen_q else None,
            "candidate_q_mean": float(np.mean(mean_q)) if mean_q else None})

    def weights(self, run: Run, version: int, model: torch.nn.Module, added: list[Added]
                ) -> tuple[StepWeights, dict[str, float]]:
        from vla.data.store import EpisodeStore
        from vla.refine.labels import build_step_labels
        from vla.refine.weights import group_sample_distribution

        with EpisodeStore.open(run.store_path) as store:
            table = store.table()
            labels = build_step_labels(store)
        loss = labels.demo.astype(np.float32)  # demos and corrections
        starts = np.zeros(len(loss), bool)
        n = 0
        for a in added:  # re-ranked chunks of every iteration so far
            for e in a.episodes:
                loss[table.episode_starts[e]:table.episode_ends[e]] = 1.0
                starts[table.episode_starts[e]] = True  # one window: the state and its best chunk
                n += 1
        groups = {"demo": labels.demo, "policy": starts}
        sample = group_sample_distribution(loss, groups, {"demo": self.args.demo_share,
                                                          "policy": 1 - self.args.demo_share})
        q = added[-1].info if added else {}
        critic = q.get("critic", {})
        return StepWeights(loss=loss, sample=sample), {
            "pa_rl_windows": float(n), "supervised_steps": float((loss > 0).sum()),
            "val_viability_auroc": critic.get("val_viability_auroc", float("nan")),
            "chosen_q_mean": q.get("chosen_q_mean") or float("nan"),
            "candidate_q_mean": q.get("candidate_q_mean") or float("nan")}


__all__ = ["PaRl", "PaRlArgs", "best_chunks", "executed_chunks"]
