"""Not a test module (no test_ prefix): tests/test_require_all.py names it in a subprocess. A module whose
import-time skip stands for a part that is not installed."""

import pytest

pytest.importorskip("vla_no_such_part_installed")


def test_never_runs() -> None:
    raise AssertionError("the module skips before this")
