"""`vla train`: pretrain a policy on an EpisodeStore (config composition and data selection).

The policy's interface (cameras, state and action sizes) comes from the store's schema unless
the overrides set it; the observation history and chunk length come from the policy config, so
the windows always match the model. Episodes are filtered by task / source / success and split
into train and validation episodes with a seeded random split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vla.config import ConfigError, load_config
from vla.data.dataset import WindowDataset, load_instruction_aliases, split_episodes
from vla.data.stats import describe_near_constant
from vla.data.store import EpisodeStore
from vla.policy.config import PolicyConfig
from vla.policy.rotation import detect_quats
from vla.train.config import TrainConfig


@dataclass
class DataSelection:
    tasks: list[str] = field(default_factory=list)  # empty: every task
    sources: list[str] = field(default_factory=list)  # empty: every source
    success_only: bool = False
    val_fraction: float = 0.1
    split_seed: int = 0
    # a JSON/YAML file {instruction: [paraphrases]}: training windows draw their instruction from the
    # stored one and its paraphrases (validation keeps the stored one)
    instruction_aliases: str = ""
    # draw each task's windows equally often, however many steps its episodes hold (a multi-task
    # store's short tasks, e.g. Meta-World's reach, 48 steps a demo against peg insertion's 112,
    # are otherwise seen less than half as often)
    balance_tasks: bool = False


def split_overrides(overrides: list[str]) -> dict[str, list[str]]:
    """Route `policy.x=`, `train.x=`, `data.x=` overrides to their config; anything else is an error."""
    routed: dict[str, list[str]] = {"policy": [], "train": [], "data": []}
    for item in overrides:
        head, _, rest = item.partition(".")
        if head not in routed or not rest:
            raise ConfigError(f"override '{item}' must start with policy., train. or data. "
                              "(e.g. policy.d_model=64 train.steps=100 data.tasks=[lift])")
        routed[head].append(rest)
    return routed


def select_episodes(store: EpisodeStore, sel: DataSelection) -> np.ndarray:
    episodes = store.select(task=sel.tasks or None, source=sel.sources or None,
                            success=True if sel.success_only else None)
    if len(episodes) == 0:
        raise ValueError(f"{store.path}: no episodes match tasks={sel.tasks or 'any'}, "
                         f"sources={sel.sources or 'any'}, success_only={sel.success_only}")
    return episodes


def task_balanced_weights(episode_ends: np.ndarray, tasks: np.ndarray, episodes: np.ndarray) -> np.ndarray:
    """Per store step: 1 / (steps of its task among `episodes`) for the steps of `episodes`, 0 elsewhere,
    so that every task's windows carry the same total weight."""
    episode_ends = np.asarray(episode_ends, np.int64)
    starts = np.concatenate([[0], episode_ends[:-1]])
    lengths = episode_ends - starts
    episodes = np.asarray(episodes, np.int64)
    per_task: dict[str, int] = {}
    for ep in episodes:
        per_task[str(tasks[ep])] = per_task.get(str(tasks[ep]), 0) + int(lengths[ep])
    weights = np.zeros(int(episode_ends[-1]) if len(episode_ends) else 0, np.float64)
    for ep in episodes:
        weights[starts[ep]:episode_ends[ep]] = 1.0 / per_task[str(tasks[ep])]
    return weights


def training_states(store: EpisodeStore, episodes: np.ndarray, max_rows: int = 200_000) -> np.ndarray:
    """The states of `episodes` (the first `max_rows`), to detect the quaternions in them."""
    rows: list[np.ndarray] = []
    n = 0
    for ep in episodes:
        start, stop = store.episode_bounds(int(ep))
        rows.append(store.read("state", start, stop))
        n += stop - start
        if n >= max_rows:
            break
    return np.concatenate(rows)[:max_rows] if rows else np.zeros((0, store.schema.state_dim), np.float32)


def build(store_path: str | Path, policy_preset: str, train_preset: str, overrides: list[str],
          resume_from: Path | None = None
          ) -> tuple[PolicyConfig, TrainConfig, WindowDataset, WindowDataset | None, Any]:
    """Resolved configs, train/val datasets and the store's statistics. `resume_from`: the checkpoint a
    resumed run continues, whose quaternion setting it keeps (its weights were made for that input)."""
    routed = split_overrides(overrides)
    store = EpisodeStore.open(store_path)
    schema = store.schema
    explicit = {o.split("=", 1)[0] for o in routed["policy"]}
    interface: dict[str, Any] = {}
    if "cameras" not in explicit:
        interface["cameras"] = list(schema.cameras)
    if "state_dim" not in explicit:
        interface["state_dim"] = schema.state_dim
    if "action_dim" not in explicit:
        interface["action_dim"] = schema.action_dim
    train_cfg = load_config(TrainConfig, "train", train_preset, routed["train"])
    if train_cfg.perception_frames and "perception_dim" not in explicit:
        from vla.train.perception import frames_dim

        interface["perception_dim"] = frames_dim(train_cfg.perception_frames)
    policy_cfg = load_config(PolicyConfig, "policy", policy_preset, routed["policy"], values=interface)
    selection = load_config(DataSelection, "data", None, routed["data"])
    episodes = select_episodes(store, selection)
    train_eps, val_eps = split_episodes(episodes, selection.val_fraction, selection.split_seed)
    kw = {"obs_horizon": policy_cfg.n_obs_steps, "action_horizon": policy_cfg.chunk_size,
          "cameras": policy_cfg.cameras}
    aliases = load_instruction_aliases(selection.instruction_aliases) if selection.instruction_aliases else None
    if aliases is not None:
        stored = set(store.table().instruction[train_eps].astype(str))
        if not stored & set(aliases):
            raise ValueError(f"{selection.instruction_aliases}: none of its instructions is in the training episodes "
                             f"(they say e.g. '{sorted(stored)[0]}')")
    if "state_quats" not in explicit and resume_from is not None:
        from vla.policy.checkpoint import load_config as checkpoint_config

        policy_cfg = policy_cfg.replace(state_quats=checkpoint_config(resume_from).state_quats)
    elif "state_quats" not in explicit:
        found = detect_quats(training_states(store, train_eps))
        if found:
            policy_cfg = policy_cfg.replace(state_quats=found)
            print(f"state[{', '.join(f'{i}:{i + 4}' for i in found)}] holds unit quaternions: the policy sees their "
                  "6D rotation features (policy.state_quats=[] keeps the raw values)", flush=True)
    sample_weights = None
    if selection.balance_tasks:
        table = store.table()
        sample_weights = task_balanced_weights(table.episode_ends, table.task, train_eps)
    train_ds = WindowDataset(store, train_eps, instruction_aliases=aliases, sample_weights=sample_weights, **kw)
    val_ds = WindowDataset(store, val_eps, **kw) if len(val_eps) else None
    keys = ["state", "action", *(f"images/{c}" for c in policy_cfg.cameras)]
    stats = store.stats(keys=keys, episodes=train_eps)
    if resume_from is None:  # the floor takes effect when the statistics are set: said there, once
        quat_dims = frozenset(i + k for i in policy_cfg.state_quats for k in range(4))
        line = describe_near_constant("state", stats["state"], policy_cfg.state_floor, quat_dims)
        if line:
            print(line + " (policy.state_floor)", flush=True)
    return policy_cfg, train_cfg, train_ds, val_ds, stats


def instruction_groups(instructions: list[str], aliases: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """The training phrasings grouped by meaning: each distinct non-blank instruction with its aliases
    (groups that share a phrasing merged), which the checkpoint carries for grounding."""
    from vla.policy.grounding import phrasing_groups

    return phrasing_groups({t: list(aliases.get(t, ())) for t in set(instructions) if t.strip()})


def run_training(store_path: str | Path, out_dir: str | Path, policy_preset: str = "tiny",
                 train_preset: str = "default", overrides: list[str] | None = None,
                 resume: bool = False, eval_task: str = "", eval_episodes: int = 10) -> Any:
    """Train (or resume); with `eval_task` the sim evaluator runs every `train.eval_every` steps and
    its success rate goes to TensorBoard (eval/success_rate)."""
    from vla.policy.model import VLAModel
    from vla.train.trainer import latest_checkpoint, train

    out_dir = Path(out_dir)
    last = latest_checkpoint(out_dir) if resume else None
    can_resume = last is not None
    policy_cfg, train_cfg, train_ds, val_ds, stats = build(store_path, policy_preset, train_preset,
                                                           list(overrides or []), resume_from=last)
    import torch

    torch.manual_seed(train_cfg.seed)  # the initial weights are part of the run: same seed, same run
    model = VLAModel(policy_cfg, stats)
    if train_cfg.init_weights and not can_resume:  # a resumed run has its own weights
        from vla.policy.checkpoint import load_partial_weights

        n = load_partial_weights(model, train_cfg.init_weights)
        print(f"initialised {n} tensors from {train_cfg.init_weights}", flush=True)
    table = train_ds.store.table()
    stored = [str(table.instruction[e]) for e in train_ds.episodes]
    model.instruction_groups = instruction_groups(stored, train_ds.instruction_aliases)
    if policy_cfg.language_norm and not can_resume:  # a resumed run loads them with the weights
        model.set_language_stats(stored + [a for t in set(stored) for a in train_ds.instruction_aliases.get(t, ())])
    evaluator = None
    if eval_task:
        from vla.registry import EVALUATORS

        image_size = next(iter(train_ds.store.schema.cameras.values()), (84, 84))[0]
        evaluator = EVALUATORS.make("sim", task=eval_task, episodes=eval_episodes,
                                    out_dir=str(out_dir / "eval"), image_size=image_size)
    return train(model, train_ds, train_cfg, out_dir, stats, val_ds, resume=can_resume, evaluator=evaluator)
