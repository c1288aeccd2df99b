from pathlib import Path

import numpy as np
import pytest

from vla.policy.grounding import GroundedEncoder, attach, ground, load_vocab, phrasing_groups, scores
from vla.policy.language import shared_encoder


def test_groups_merge_phrasings_that_share_a_paraphrase_and_ignore_file_order() -> None:
    aliases = {"a1": ["a2"], "a2": ["a3"], "b1": ["b2"], "c": []}
    assert phrasing_groups(aliases) == [("a1", "a2", "a3"), ("b1", "b2"), ("c",)]
    assert phrasing_groups(dict(reversed(list(aliases.items())))) == phrasing_groups(aliases)


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_whitening_discounts_template_wording_that_the_vocabulary_shows_varies_within_a_goal() -> None:
    # two goals (x = +-0.5) said with three templates (y, -y, z); the query is goal a in template y,
    # which the vocabulary has only for goal b: by cosine its nearest phrasing is b's, but every goal's
    # phrasings spread along y and z, so the whitened metric reads the goal off x
    a, b, t1, t2, t3 = [0.5, 0, 0], [-0.5, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1]
    vocab = unit(np.array([np.add(a, t2), np.add(a, t3), np.add(b, t1), np.add(b, t2), np.add(b, t3)], float))
    group = np.array([0, 0, 1, 1, 1])
    query = unit(np.add(a, t1).astype(float))
    assert int(np.argmax(vocab @ query)) == 2  # the nearest phrasing is goal b's
    best, cos, lead = scores(query, vocab, group)
    assert group[best] == 0 and lead > 0.05
    assert cos == pytest.approx(max(vocab[group == 0] @ query))  # the chosen goal's most similar phrasing
    assert ground(query, vocab, group, min_cos=0.0) in (0, 1)  # (3-d vectors: cosines far below a sentence's)
    # with no within-goal spread to learn from, the metric is the plain one: goal b's template-y phrasing wins
    best0, _, _ = scores(query, vocab, group, shrinkage=1.0)
    assert group[best0] == 1


def test_ground_abstains_on_ties_far_texts_and_single_groups() -> None:
    vocab = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # one phrasing per group: nearest phrasing
    group = np.array([0, 1])
    assert ground(np.array([2.0, 0.3, 0.0]), vocab, group) == 0  # the query's length does not matter
    tie = np.array([1.0, 1.0, 0.0])
    assert scores(tie, vocab, group)[2] == pytest.approx(0.0)
    assert ground(tie, vocab, group, margin=0.05) is None
    assert ground(tie + np.array([0.0, 0.2, 0.0]), vocab, group, margin=0.05) == 1
    # far from everything: abstains below min_cos even with a clear leader
    assert ground(np.array([0.3, 0.0, -1.0]), vocab, group, margin=0.0, min_cos=0.5) is None  # cosine 0.29
    assert ground(np.array([1.0, 0.0, 0.0]), vocab, np.zeros(2, int)) is None  # one group: nothing to choose
    with pytest.raises(ValueError, match="shapes"):
        ground(np.ones(2), vocab, group)


def sort_vocab(tmp_path: Path) -> Path:
    import json

    from sim.tasks.native.sort import instruction_aliases

    path = tmp_path / "aliases.json"
    path.write_text(json.dumps(instruction_aliases()))
    return path


def test_sort_heldout_phrasings_ground_on_their_goal_and_vague_ones_pass_as_said(tmp_path: Path) -> None:
    from sim.tasks.native.sort import GOALS, HELDOUT_TEMPLATES, TRAIN_TEMPLATES, instruction_for

    groups = load_vocab(sort_vocab(tmp_path))
    assert len(groups) == len(GOALS)  # the aliases file's phrasings, one group per goal
    base = shared_encoder()
    enc = GroundedEncoder(base, groups)
    for goal in GOALS:
        for template in HELDOUT_TEMPLATES:
            text = instruction_for(goal, template)
            vec = enc.encode([text])
            target = enc.grounded_to(text)
            assert target and f"{goal[0]} " in target and f"{goal[1]} " in target, (text, target)
            assert np.array_equal(vec, base.encode([target]))
    known = instruction_for(GOALS[0], TRAIN_TEMPLATES[0])
    assert np.array_equal(enc.encode([known]), base.encode([known])) and enc.grounded_to(known) == ""
    for vague in ("sort the cubes", "put the red cube somewhere", "put the purple cube in the white zone",
                  "do the task"):
        assert np.array_equal(enc.encode([vague]), base.encode([vague])) and enc.grounded_to(vague) == "", vague
    with pytest.raises(ValueError, match="empty"):
        enc.encode(["  "])


def test_vocab_files_that_cannot_ground_fail_with_the_file_named(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text('{"open the drawer": ["pull the drawer out"]}')
    with pytest.raises(ValueError, match=r"one\.json.*1 group"):
        load_vocab(one)
    with pytest.raises(FileNotFoundError, match=r"missing\.json"):
        load_vocab(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="margin"):
        GroundedEncoder(shared_encoder(), [("a",), ("b",)], margin=float("nan"))


def test_attach_grounds_one_policy_and_leaves_the_shared_encoder(tmp_path: Path) -> None:
    from tests.real.test_joint_vla import build_tiny_checkpoint
    from vla.policy.policy import load_torch_policy

    ck = build_tiny_checkpoint(tmp_path / "ck")
    grounded, plain = load_torch_policy(ck, seed=0), load_torch_policy(ck, seed=0)
    enc = attach(grounded, sort_vocab(tmp_path))
    assert grounded.grounding is enc and grounded.model.language is enc
    assert plain.model.language is shared_encoder()


def test_a_checkpoint_grounds_on_the_phrasings_it_carries_and_one_without_them_says_so(tmp_path: Path) -> None:
    from sim.tasks.native.sort import instruction_aliases
    from tests.real.test_joint_vla import build_tiny_checkpoint
    from vla.policy.export import OnnxPolicy, export_onnx
    from vla.policy.policy import load_torch_policy

    groups = phrasing_groups(instruction_aliases())
    ck = build_tiny_checkpoint(tmp_path / "ck", groups=groups)
    torch_policy = load_torch_policy(ck, seed=0)
    assert torch_policy.model.instruction_groups == groups
    onnx_policy = OnnxPolicy(export_onnx(ck, tmp_path / "onnx"))
    assert onnx_policy.instruction_groups == groups and load_vocab(tmp_path / "onnx") == groups
    held = "drop the red cube into the white region"
    from_file = attach(load_torch_policy(ck, seed=0), sort_vocab(tmp_path))
    from_file.encode([held])
    assert "red cube" in from_file.grounded_to(held) and "white" in from_file.grounded_to(held)
    for policy in (torch_policy, onnx_policy):
        enc = attach(policy, "checkpoint")
        enc.encode([held])
        assert enc.grounded_to(held) == from_file.grounded_to(held)
    bare = build_tiny_checkpoint(tmp_path / "bare")
    with pytest.raises(ValueError, match=r"instruction_vocab=checkpoint: .*0 group"):
        attach(load_torch_policy(bare, seed=0), "checkpoint")
    with pytest.raises(ValueError, match=r"bare: its phrasings form 0 group"):
        load_vocab(bare)


def test_the_command_line_says_what_each_text_would_become(tmp_path: Path, capsys) -> None:
    from vla.policy.grounding import main

    main([str(sort_vocab(tmp_path)), "drop the red cube into the white region", "sort the cubes"])
    held, vague = capsys.readouterr().out.splitlines()
    assert "-> '" in held and "red cube" in held.split("->")[1] and "white" in held.split("->")[1]
    assert "as said" in vague
    with pytest.raises(SystemExit, match=r"error: .*nowhere\.json"):
        main([str(tmp_path / "nowhere.json"), "x"])
    with pytest.raises(SystemExit, match=r"error: '  ': .*empty"):
        main([str(sort_vocab(tmp_path)), "  "])
