"""Policy specs: the one string that names a policy everywhere (evaluation, refinement, the robot's
policy node). A spec is a checkpoint folder (torch), an ONNX export folder (`ONNX_META` inside), or
"NAME:ARGS" wrapping another spec (`vla.registry.POLICY_SPECS`: "select:", "dsrl:", "wm-select:",
"reguide:", "mean:"). The simulator adds its built-ins ("zero", "random", "expert": they act in an env) in
`sim.policies.load_policy`, which hands everything else to `load_spec`; the robot path calls
`load_spec` directly, so it never needs the simulator."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vla.data.schema import closest

if TYPE_CHECKING:
    from vla.policy.config import PolicyConfig

ONNX_META = "runtime.json"  # written by vla.policy.export: the folder is an ONNX export


def wrapper_spec(spec: str) -> tuple[str, str] | None:
    """(name, args) of a "NAME:ARGS" spec that wraps a policy, or None for a folder (a one-letter
    prefix is a Windows drive, not a name)."""
    prefix, sep, rest = spec.partition(":")
    return (prefix, rest) if sep and len(prefix) > 1 else None


def policy_label(spec: str) -> str:
    """A short name for progress bars and plot titles: a folder's last part, a wrapper spec's name
    with its checkpoint's ("dsrl step_00003000", not the tail of its last argument)."""
    wrapper = wrapper_spec(spec)
    if wrapper is None:
        return Path(spec).name
    name, args = wrapper
    ckpt = next((v for k, _, v in (a.partition("=") for a in args.split(",")) if k.strip() == "ckpt"), "")
    if "+" in ckpt:  # several members ("mean:ckpt=A+B"): their count, not the last one's folder
        return f"{name} of {len(ckpt.split('+'))}"
    return f"{name} {Path(ckpt).name}".strip()


def is_onnx_export(path: str | Path) -> bool:
    return (Path(path) / ONNX_META).is_file()


def load_spec(spec: str, *, seed: int = 0, noise_scale: float | None = None,
              load: Callable[[str], Any] | None = None) -> Any:
    """The policy `spec` names. `noise_scale`: a checkpoint's inference noise scale instead of its
    own; `load`: how a wrapper loads the spec it wraps (default: this function, same seed and scale;
    the evaluator passes one that also knows its built-ins)."""
    wrapper = wrapper_spec(spec)
    if wrapper is not None:
        from vla.registry import POLICY_SPECS

        name, args = wrapper
        inner = load or (lambda s: load_spec(s, seed=seed, noise_scale=noise_scale))
        return POLICY_SPECS.get(name)(args, seed=seed, load=inner)
    path = Path(spec)
    if not path.is_dir():
        raise FileNotFoundError(f"policy '{spec}' is not an existing checkpoint or ONNX export folder")
    if is_onnx_export(path):
        from vla.policy.export import OnnxPolicy

        return OnnxPolicy(path, seed=seed, noise_scale=noise_scale)
    from vla.policy.policy import load_torch_policy

    return load_torch_policy(path, seed=seed, noise_scale=noise_scale)


def check_spec(spec: str) -> PolicyConfig | None:
    """Validate a checkpoint or ONNX export folder before anything loads it (a damaged or missing
    one is one CheckpointError / FileNotFoundError naming the file); its policy config, or None for
    a wrapper (the wrapped spec is checked when it loads)."""
    if wrapper_spec(spec) is not None:
        return None
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"policy '{spec}' is not an existing checkpoint or ONNX export folder")
    if is_onnx_export(path):
        from vla.policy.export import validate_export

        return validate_export(path)
    from vla.policy.checkpoint import validate_checkpoint

    return validate_checkpoint(path)


def spec_args(name: str, args: str, valid: tuple[str, ...], required: tuple[str, ...], example: str
              ) -> dict[str, str]:
    """The key=value arguments of a "NAME:ARGS" policy spec, checked: one-line errors name the part
    that is not key=value, an unknown key (with the close match) or a missing one."""
    out = {}
    for part in filter(None, args.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"{name}: '{part}' is not key=value (spec: {example})")
        out[key.strip()] = value.strip()
    unknown = sorted(set(out) - set(valid))
    if unknown:
        raise ValueError(f"{name}: unknown key '{unknown[0]}'{closest(unknown[0], valid)}")
    for need in required:
        if need not in out:
            raise ValueError(f"{name}: missing {need}= (spec: {example})")
    return out


def spec_loader(load: Callable[[str], Any] | None, seed: int = 0) -> Callable[[str], Any]:
    """How a "NAME:ARGS" spec loads the policy it wraps: the caller's `load` (`vla.policy.specs.load_spec`
    passes one; the evaluator's also knows the simulator's built-ins), else any spec seeded with `seed`."""
    if load is not None:
        return load
    return lambda spec: load_spec(spec, seed=seed)
