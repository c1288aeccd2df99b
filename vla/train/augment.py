"""State augmentation in training (`train.augment`): the object poses and the arm's state a real robot's
sensors report, drawn into each training window with the perturbation suite's own names and units
(vla.perturb), so a policy learns from demos whose poses carry a pose estimator's errors.

`train.augment=pose_bias:8,pose_noise:3` adds, to every window's object poses, an offset of up to 8 mm in
a random direction and per-step Gaussian noise of up to 3 mm. As in domain randomisation
(`demos.randomize`, vla.perturb.draw_severities) each window draws its own severities from [0, the given
one], so the batch spans clean to the full severity. The targets (actions, future states) stay clean:
the expert acted on the true poses, which is what the policy should learn to do from noisy ones.

The poses come back from the state's object features (vla.robot.objects: features -> poses), are
perturbed as the evaluator perturbs them (`Perturber.poses`), and the features are rebuilt with the
window's hand position, so `cube - hand` moves with the cube as it does on a robot. Data augmentation of
low-dimensional inputs with the noise of the deployed sensor is the standard remedy (e.g. robomimic's
observation noise, arXiv 2108.03298, and the noise injection of DART, arXiv 1703.09327, which perturbs the
expert's actions instead); ours names the errors in physical units and shares them with the evaluator.
`pose_latency:L` delivers each window's object poses 0..L steps late (a whole number drawn per window)
and `pose_dropout:P` re-sends, with a chance drawn from [0, P] per step, the pose of one step before; both
read the window's earlier states (`history`, from the dataset: WindowDataset.earlier_states), clipped at
the episode's start as the evaluator's first steps are. A real dropout may repeat a pose for several
steps in a row; here it is one step, the common case at the severities a lab sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from vla.perturb import PROPRIO, draw_severities, noisy_proprio, parse_perturb, random_unit, turned
from vla.robot.objects import OBJECT_FEATURES, object_feature_count

AUGMENT_KINDS = ("pose_noise", "pose_rot_noise", "pose_bias", "pose_latency", "pose_dropout", "proprio_noise")


def parse_augment(text: str) -> dict[str, float]:
    """`NAME:SEVERITY,...` of the kinds training can draw -> {kind: severity}; '' or 'none' -> {}."""
    kinds = parse_perturb(text) if str(text).strip() else {}
    bad = [k for k in kinds if k not in AUGMENT_KINDS]
    if bad:
        how = "it acts on the cameras, the scene, the images or the commands, which the collection randomises " \
              "(demos.randomize)"
        raise ValueError(f"train.augment: '{bad[0]}' cannot be drawn in training ({how}); it takes "
                         f"{', '.join(AUGMENT_KINDS)}")
    return kinds


def check_task(task: str, state_dim: int) -> None:
    """A clear error where the states hold no object poses in the layout augmentation rebuilds."""
    if task not in OBJECT_FEATURES:
        raise ValueError(f"train.augment: task '{task}' has no object poses in its state (tasks with: "
                         f"{', '.join(sorted(OBJECT_FEATURES))})")
    want = PROPRIO + object_feature_count(task)
    if state_dim != want:
        raise ValueError(f"train.augment: task '{task}' states have {state_dim} values, expected {want} "
                         f"(the arm's {PROPRIO}, then the object features: a store with obs_mode=state)")


def history_lags(kinds: Mapping[str, float]) -> int:
    """How many steps back `augment_states` may read poses: the latency, plus one for a dropout."""
    return int(kinds.get("pose_latency", 0)) + (1 if kinds.get("pose_dropout", 0) > 0 else 0)


def augment_states(states: np.ndarray, tasks: str | Sequence[str], kinds: Mapping[str, float],
                   rng: np.random.Generator, history: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
    """states [B, To, D] (raw, obs_mode=state) of `tasks` (one, or one per window) -> the same with each
    window's drawn errors. `history` {lag: the states [B, To, D] the same windows had `lag` steps earlier}
    for lags 1..history_lags(kinds). Pure: the input is not changed; the same rng state gives the same
    draws."""
    x = np.array(states, np.float64, copy=True)
    if not kinds:
        return x
    if x.ndim != 3:
        raise ValueError(f"train.augment: states must be [B, To, D], got shape {x.shape}")
    per_window = [tasks] * len(x) if isinstance(tasks, str) else list(tasks)
    if len(per_window) != len(x):
        raise ValueError(f"train.augment: {len(per_window)} tasks for {len(x)} windows")
    for task in set(per_window):
        check_task(task, x.shape[2])
    lags = history_lags(kinds)
    missing = [k for k in range(1, lags + 1) if history is None or k not in history]
    if missing:
        raise ValueError(f"train.augment: pose_latency / pose_dropout need the states {missing} steps earlier")
    for b, task in enumerate(per_window):
        spec = OBJECT_FEATURES[task]
        n = object_feature_count(task)
        sev = draw_severities(kinds, rng)
        bias = random_unit(rng) * sev.get("pose_bias", 0.0) * 1e-3
        for t in range(x.shape[1]):
            row = x[b, t]
            if sev.get("proprio_noise"):
                row[:PROPRIO] = noisy_proprio(row[:PROPRIO], sev["proprio_noise"] * 1e-3, rng)
            lag = int(sev.get("pose_latency", 0)) + int(rng.random() < sev.get("pose_dropout", 0.0))
            seen = row if lag == 0 else np.asarray(history[lag][b, t], np.float64)  # type: ignore[index]
            poses = spec.poses_from(seen[-n:])
            poses[:, :3] += bias
            if sev.get("pose_noise"):
                poses[:, :3] += rng.normal(0.0, sev["pose_noise"] * 1e-3, size=(len(poses), 3))
            if sev.get("pose_rot_noise"):
                for i in range(len(poses)):
                    poses[i, 3:7] = turned(poses[i, 3:7], sev["pose_rot_noise"], rng)
            row[-n:] = spec.features(poses, row[:3])
    return x
