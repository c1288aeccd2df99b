"""vla/policy/specs.py: the string that names a policy, loaded without the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from vla.policy.policy import TorchPolicy
from vla.policy.specs import ONNX_META, check_spec, is_onnx_export, load_spec, policy_label, wrapper_spec


def test_policy_label_names_a_wrapper_by_its_name_and_checkpoint() -> None:
    assert policy_label("runs/x/checkpoints/step_00003000") == "step_00003000"
    assert policy_label("dsrl:ckpt=runs/x/step_00003000,actor=runs/y/actor.safetensors,mode=mean") \
        == "dsrl step_00003000"
    assert policy_label("wm-select:wm=runs/wm,k=8") == "wm-select"
    assert policy_label("expert") == "expert"
    assert wrapper_spec("C:/runs/ckpt") is None  # a drive letter is not a wrapper's name


def test_a_folder_loads_by_its_content_and_a_wrapper_loads_what_it_wraps(tiny_ckpt: Path) -> None:
    policy = load_spec(str(tiny_ckpt), seed=3)
    assert isinstance(policy, TorchPolicy) and not is_onnx_export(tiny_ckpt)
    assert check_spec(str(tiny_ckpt)).action_dim == 7
    inner: list[str] = []
    wrapped = load_spec(f"select:ckpt={tiny_ckpt},n=2", load=lambda s: inner.append(s) or load_spec(s))
    assert inner == [str(tiny_ckpt)] and wrapped.n == 2  # the caller's loader loads the wrapped spec


def test_bad_specs_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="'nowhere' is not an existing checkpoint or ONNX export folder"):
        load_spec("nowhere")
    with pytest.raises(KeyError, match=r"unknown policy spec 'selekt'.*did you mean 'select'"):
        load_spec("selekt:ckpt=x")
    (tmp_path / ONNX_META).write_text("{}")
    assert is_onnx_export(tmp_path)
    with pytest.raises(Exception, match=ONNX_META):  # a broken export is named by its file
        check_spec(str(tmp_path))
    assert check_spec("dsrl:ckpt=x") is None  # a wrapper's inner spec is checked when it loads
