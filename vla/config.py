"""Typed configs: dataclasses, YAML presets in `configs/<kind>/<name>.yaml`, `key=value` overrides.

The presets are package data (`vla/configs/`, so that a wheel install has them); the repository's
`configs` is a symlink to that folder.

One library does the merging (OmegaConf structured configs): the dataclass is the schema, a preset
is a partial YAML over its defaults, and command-line overrides go last. Unknown keys, unknown
presets and values of the wrong type are errors that name the key and suggest the closest valid
name.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException, ValidationError

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
T = TypeVar("T")


class ConfigError(ValueError):
    """A preset, key or value that the config does not accept."""


class UnknownPresetError(ConfigError, FileNotFoundError):
    """A preset name or config file that does not exist."""


def preset_names(kind: str, config_dir: Path = CONFIG_DIR) -> list[str]:
    return sorted(p.stem for p in (config_dir / kind).glob("*.yaml"))


def preset_path(kind: str, name: str, config_dir: Path = CONFIG_DIR) -> Path:
    """`name` is a preset of `configs/<kind>/` or a path to a YAML file."""
    candidate = Path(name)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.exists():
            raise UnknownPresetError(f"config file {candidate} does not exist")
        return candidate
    path = config_dir / kind / f"{name}.yaml"
    if not path.exists():
        valid = preset_names(kind, config_dir)
        raise UnknownPresetError(f"unknown {kind} preset '{name}'{_suggest(name, valid)}")
    return path


def load_config(cls: type[T], kind: str, preset: str | Path | None = None, overrides: Sequence[str] = (),
                config_dir: Path = CONFIG_DIR, values: dict[str, Any] | None = None) -> T:
    """Defaults of `cls`, then the preset (if any), then `values` (a dict from Python code), then
    `key=value` overrides (dotted keys, from the command line)."""
    schema = OmegaConf.structured(cls)
    layers: list[tuple[str, Any]] = []
    if preset is not None:
        path = preset_path(kind, str(preset), config_dir)
        with open(path) as f:
            data = yaml.safe_load(f) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a preset must be a mapping of keys to values, got {type(data).__name__}")
        layers.append((str(path), data))
    if values:
        layers.append(("values", dict(values)))
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override '{item}' is not of the form key=value")
        key, value = item.split("=", 1)
        layers.append((f"override '{item}'", _nest(key.strip(), yaml.safe_load(value) if value else value)))
    for origin, data in layers:
        _check_keys(cls, data, origin)
        try:
            schema = OmegaConf.merge(schema, data)
        except ValidationError as e:
            # `msg` is None for some merge errors (a scalar where a section is due): use the text then.
            reason = (e.msg or str(e) or type(e).__name__).splitlines()[0]
            raise ConfigError(f"{origin}: key '{e.full_key}': {reason}") from None
        except (OmegaConfBaseException, TypeError) as e:  # other merge failures (a mapping into a list)
            raise ConfigError(f"{origin}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    obj = OmegaConf.to_object(schema)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        validate()
    return obj  # type: ignore[return-value]


def from_dict(cls: type[T], data: dict[str, Any], origin: str | None = None) -> T:
    """Build a dataclass from a plain dict (e.g. a checkpoint's saved config), rejecting unknown
    keys with the closest valid name."""
    _check_keys(cls, data, origin or cls.__name__)
    return cls(**data)


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def to_yaml(config: Any) -> str:
    return yaml.safe_dump(to_dict(config), sort_keys=False)


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(dotted.split(".")):
        out = {part: out}
    return out


def _check_keys(cls: type, data: dict[str, Any], origin: str, prefix: str = "") -> None:
    """Reject unknown keys here, before OmegaConf, to name the closest valid key."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        full = f"{prefix}{key}"
        if key not in fields:
            renamed = getattr(cls, "RENAMED", {})  # a key a config no longer has, with what replaced it
            if key in renamed:
                raise ConfigError(f"{origin}: '{full}' is gone: {renamed[key]}")
            raise ConfigError(f"{origin}: unknown key '{full}'{_suggest(str(key), sorted(fields), prefix)}")
        sub = _dataclass_type(cls, key)
        if sub is not None and isinstance(value, dict):
            _check_keys(sub, value, origin, prefix=f"{full}.")


def _dataclass_type(cls: type, name: str) -> type | None:
    hints = _hints(cls)
    hint = hints.get(name)
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _hints(cls: type) -> dict[str, Any]:
    import typing

    try:
        return typing.get_type_hints(cls)
    except Exception:
        return {}


def _suggest(name: str, valid: Sequence[str], prefix: str = "") -> str:
    match = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.5)
    listing = ", ".join(f"{prefix}{v}" for v in valid)
    if match:
        return f" (did you mean '{prefix}{match[0]}'? valid: {listing})"
    return f" (valid: {listing})"


__all__ = ["CONFIG_DIR", "ConfigError", "UnknownPresetError", "from_dict", "load_config", "preset_names", "preset_path",
           "to_dict", "to_yaml"]
