"""The robot path needs no simulator: with `sim` (and robosuite) unimportable, as on an arm's computer
without the simulation package, `import real` works and the policy node starts from a deploy config,
loads the VLA through the joint-space adapter and runs until told to stop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

from real.stages import write_node_config
from tests.real.test_joint_vla import build_tiny_checkpoint

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[3]
# an import hook that makes the simulator's packages missing, as in a venv without them
BLOCK = """
import importlib.abc, sys
class NoSimulator(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sim", "robosuite"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: no simulator here)", name=name)
        return None
sys.meta_path.insert(0, NoSimulator())
"""


def run_blocked(code: str, tmp_path: Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "probe.py"
    script.write_text(BLOCK + code)
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                          capture_output=True, text=True, timeout=timeout)


def test_the_hook_really_hides_the_simulator(tmp_path: Path) -> None:
    out = run_blocked("import sim\n", tmp_path)
    assert out.returncode != 0 and "blocked: no simulator here" in out.stderr


def test_real_imports_and_the_policy_node_starts_without_the_simulator(tmp_path: Path, domain_id: int) -> None:
    ckpt = build_tiny_checkpoint(tmp_path / "ckpt")
    node_cfg = write_node_config(tmp_path / "node.yaml", ckpt, "torch", "aligned", 20.0)
    code = f"""
import real, real.config, real.joint_vla, real.executor, real.safety, real.ros.policy_node
import real.session.ros_env, real.session.human, real.session.runner
from real.ros.policy_node import main
main(["--config", {str(node_cfg)!r}, "--duration", "2"])
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("sim", "robosuite"))
print("SIM MODULES", leaked)
"""
    out = run_blocked(code, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "SIM MODULES []" in out.stdout
