"""Orientation inputs the network can learn from: unit quaternions in the state replaced by the 6D
rotation representation (the first two columns of the rotation matrix; Zhou et al. 2019, "On the
Continuity of Rotation Representations in Neural Networks", arXiv 1812.07035).

Why: q and -q are the same rotation, and the simulators' convention (w >= 0, as MuJoCo's
`mju_mat2Quat` gives it and robomimic's proprio stores it) jumps between the two exactly where a
gripper pointing down lives (w ~ 0). In our pick_place demos 29% of the states carry the flipped
sign, and the reset pose sits on the boundary (x, y, z, w) = (0, 1, 0, 0): an arm that sagged by
1e-5 rad before its first command showed the policy (0, -1, 0, 0), a start it never saw in training,
and deployments over ROS failed 9 of 10 episodes that the simulator's evaluation passed.
The rotation matrix is quadratic in q, so these features are the same for q and -q and continuous.
Ours differs from the paper only in where it is applied: to the policy's *inputs*, inside the model
(so the stored data, the exported ONNX graph and the robot side keep the plain quaternion).
"""

from __future__ import annotations

import numpy as np
import torch

QUAT_DIM, ROT6D_DIM = 4, 6
UNIT_TOLERANCE = 1e-3  # |‖q‖ - 1| of every stored sample for a state slice to count as a quaternion


def quat_xyzw_to_rot6d(q: torch.Tensor) -> torch.Tensor:
    """[..., 4] quaternions (x, y, z, w), any norm > 0 -> [..., 6] (R[:, 0], R[:, 1]); q and -q agree.
    A zero quaternion (a padded observation) maps to the identity's columns, not NaN."""
    q = q / q.norm(dim=-1, keepdim=True).clamp_min(1e-6)  # representable in float16 exports
    x, y, z, w = q.unbind(-1)
    return torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w),
                        2 * (x * y - z * w), 1 - 2 * (x * x + z * z), 2 * (y * z + x * w)], dim=-1)


def check_state_quats(starts: tuple[int, ...] | list[int], state_dim: int) -> None:
    """Each start i names state[i:i + 4]; slices inside the state and not overlapping."""
    last = -QUAT_DIM
    for i in sorted(starts):
        if i < 0 or i + QUAT_DIM > state_dim:
            raise ValueError(f"state_quats: a quaternion at index {i} needs state[{i}:{i + QUAT_DIM}], "
                             f"but state_dim is {state_dim}")
        if i < last + QUAT_DIM:
            raise ValueError(f"state_quats: quaternions at {last} and {i} overlap (each takes 4 values)")
        last = i


def features_dim(state_dim: int, starts: tuple[int, ...] | list[int]) -> int:
    return state_dim + (ROT6D_DIM - QUAT_DIM) * len(starts)


def replace_quats(raw: torch.Tensor, normed: torch.Tensor, starts: tuple[int, ...] | list[int]) -> torch.Tensor:
    """The normalised state [..., D] with each quaternion's 4 values replaced by the 6D features of
    the *raw* quaternion (normalising a sign-ambiguous quantity per dimension keeps the ambiguity)."""
    if not starts:
        return normed
    parts, pos = [], 0
    for i in sorted(starts):
        parts += [normed[..., pos:i], quat_xyzw_to_rot6d(raw[..., i:i + QUAT_DIM])]
        pos = i + QUAT_DIM
    parts.append(normed[..., pos:])
    return torch.cat(parts, dim=-1)


def detect_quats(states: np.ndarray) -> list[int]:
    """Start indices of 4-value slices that are unit quaternions in every row of `states` [N, D],
    taken greedily left to right (non-overlapping). Constant slices (a fixed orientation) count too."""
    states = np.asarray(states, dtype=np.float64)
    if states.ndim != 2 or len(states) == 0:
        return []
    found, i = [], 0
    while i + QUAT_DIM <= states.shape[1]:
        norms = np.linalg.norm(states[:, i:i + QUAT_DIM], axis=1)
        if np.all(np.abs(norms - 1.0) < UNIT_TOLERANCE):
            found.append(i)
            i += QUAT_DIM
        else:
            i += 1
    return found
