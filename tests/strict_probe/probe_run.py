"""Not a test module (no test_ prefix): tests/test_require_all.py names it in a subprocess. One test that
skips at run time for a missing part, one marked gpu that skips for want of a device."""

import pytest


def test_needs_a_missing_part() -> None:
    pytest.skip("chromium is not installed")


@pytest.mark.gpu
def test_needs_a_device() -> None:
    pytest.skip("needs a CUDA device")
