"""The deploy YAML as ROS 2 parameters, and back: the lifecycle policy node is configured the ROS way
(`--ros-args --params-file`, `ros2 param get/list`) from the same settings as `--config`.

Mapping (`flatten` / `unflatten`, exact inverses on every shipped deploy config):
- nested sections become dotted names: `executor.mode`, `limits.max_velocity`, `policy.path`;
- the camera list becomes `camera_names` (the order) and `cameras.<name>.topic|height|width`;
- YAML null becomes the string "null" (ROS parameters have no null), and back.
Lists of numbers or strings stay arrays. The values then go through `deploy_config_from_dict`,
so unknown or bad settings fail exactly as in the YAML.

  python -m real.ros.params configs/deploy/native_arm.yaml > native_arm.params.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

NULL = "null"
NODE_NAME = "vla_policy"


def flatten(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif value is None:
            out[prefix] = NULL
        else:
            out[prefix] = list(value) if isinstance(value, (list, tuple)) else value

    for key, value in raw.items():
        if key == "cameras":
            cams = value or []
            names = [c["name"] for c in cams]
            if cams:
                out["camera_names"] = names
            for cam in cams:
                for k, v in cam.items():
                    if k != "name":
                        out[f"cameras.{cam['name']}.{k}"] = v
        else:
            walk(key, value)
    return out


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    cams: dict[str, dict[str, Any]] = {}
    for name, value in flat.items():
        value = None if value == NULL else list(value) if isinstance(value, (list, tuple)) else value
        parts = name.split(".")
        if parts[0] == "cameras" and len(parts) == 3:
            cams.setdefault(parts[1], {"name": parts[1]})[parts[2]] = value
            continue
        if name == "camera_names":
            continue
        node = raw
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"parameter '{name}': '{p}' is a value, not a section")
        node[parts[-1]] = value
    order = list(flat.get("camera_names", []))
    unnamed = sorted(set(cams) - set(order))
    if unnamed:
        raise ValueError(f"parameters cameras.{unnamed[0]}.* name a camera missing from camera_names {order}")
    missing = [n for n in order if n not in cams]
    if missing:
        raise ValueError(f"camera_names lists '{missing[0]}' but no cameras.{missing[0]}.topic/height/width is set")
    if order:
        raw["cameras"] = [cams[n] for n in order]
    return raw


def params_file(raw: dict[str, Any], node_name: str = NODE_NAME) -> str:
    return yaml.safe_dump({node_name: {"ros__parameters": flatten(raw)}}, sort_keys=False, default_flow_style=None)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="deploy YAML -> ROS 2 parameters file (stdout)")
    ap.add_argument("config", type=Path)
    ap.add_argument("--node", default=NODE_NAME, help="the node name the parameters are for")
    args = ap.parse_args(argv)
    from real.config import deploy_config_from_dict

    raw = yaml.safe_load(args.config.read_text())
    deploy_config_from_dict(raw)  # refuse to translate a config the node would refuse
    sys.stdout.write(params_file(raw, args.node))


if __name__ == "__main__":
    main()
