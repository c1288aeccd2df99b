"""The base layer names none of the packages above it: sim/, real/ and worldmodel/ plug in through the
`vla.plugins` entry point (vla/plugins.py), and no module of vla/ imports them or names them in code."""

import ast
import re
from pathlib import Path

from vla.plugins import plugins, provided, provided_configs
from vla.registry import REFINE_METHODS, STAGES, TASKS

ROOT = Path(__file__).resolve().parents[2]
UPPER = ("sim", "real", "worldmodel")


def test_the_installed_plugins_fill_the_registries() -> None:
    assert len(plugins()) == 3
    assert provided("task") == ("sim.tasks",) and "real.session.cli" in provided("cli")
    assert set(provided_configs()) == {"eval", "session", "worldmodel"}
    assert "pick_place" in TASKS.names() and "deploy" in STAGES.names()
    assert {"imagination", "reguide_ft", "habc"} <= set(REFINE_METHODS.names())


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_vla_neither_imports_nor_names_an_upper_package() -> None:
    pattern = re.compile(rf"^({'|'.join(UPPER)})(\.[a-z_]+)+(:\w+)?$")
    found = []
    for path in sorted((ROOT / "vla").rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [f"{path}: import {a.name}" for a in node.names if a.name.split(".")[0] in UPPER]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in UPPER:
                found.append(f"{path}: from {node.module}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and pattern.match(node.value):
                found.append(f"{path}: '{node.value}'")
    assert found == []
