"""A refinement method is a unit: a new one is its own class plus one registration line, the loop
calls every hook without knowing the method, and what `augment` adds comes back typed."""

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from vla.config import load_config
from vla.data.schema import EXECUTED, SOURCES, Source
from vla.data.store import EpisodeStore
from vla.refine.config import RefineConfig
from vla.refine.loop import RefineRun
from vla.refine.method import Added, Collection, MethodArgs, RefineMethod, Rollouts, Run
from vla.refine.weights import StepWeights, demo_loss, sample_distribution
from vla.registry import REFINE_METHODS

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class EchoArgs(MethodArgs):
    real_weight: float = 0.5

    def validate(self) -> None:
        if self.real_weight < 0:
            raise ValueError(f"method_args.real_weight must be >= 0, got {self.real_weight}")


@REFINE_METHODS.register("test_echo")
class Echo(RefineMethod):
    """Autonomous rollouts, each real episode trained on at `real_weight`; `augment` reports the round."""

    Args = EchoArgs
    args: EchoArgs
    intervener = ""
    calls: ClassVar[list[str]] = []

    def collection(self, run: Run, version: int) -> Collection:
        Echo.calls.append(f"collection {version}")
        return super().collection(run, version)

    def augment(self, run: Run, rollouts: Rollouts) -> Added:
        Echo.calls.append(f"augment {rollouts.version}")
        return Added(info={"episodes": rollouts.episodes.tolist(),
                           "summary_episodes": len(rollouts.summary["episodes_detail"])})

    def weights(self, run: Run, version: int, model: Any, added: list[Added]) -> tuple[StepWeights, dict[str, float]]:
        Echo.calls.append(f"weights {version} {len(added)}")
        with EpisodeStore.open(run.store_path) as store:
            table = store.table()
        loss, demo = demo_loss(table)
        for e in np.flatnonzero(np.isin(table.source, EXECUTED)):
            loss[table.episode_starts[e]:table.episode_ends[e]] = self.args.real_weight
        return StepWeights(loss=loss, sample=sample_distribution(loss, demo, None)), {"echo": 1.0}


def test_a_new_method_plugs_into_the_loop(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    ckpt, demos = pretrained
    cfg = load_config(RefineConfig, "refine", "debug", ["method_args.real_weight=0.25"],
                      values={"method": "test_echo", "ckpt": str(ckpt), "demos": str(demos), "horizon": 30,
                              "out_dir": str(tmp_path / "echo")})
    Echo.calls.clear()
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    assert Echo.calls == ["collection 0", "augment 0", "weights 0 1"]
    added = run.added(0)  # typed, from the loop's own record of the round
    table = EpisodeStore.open(run.store_path).table()
    assert added.info["episodes"] == np.flatnonzero(table.source == Source.ROLLOUT).tolist()
    assert added.info["summary_episodes"] == 2 and added.episodes == []
    assert json.loads((run.out / "iter_01" / "train_info.json").read_text())["echo"] == 1.0
    assert rows[1]["added_episodes"] == 0 and rows[1]["intervention_steps"] == 0  # no person
    Echo.calls.clear()
    RefineRun(cfg, progress=False).run()  # resumed: nothing is collected, added or trained again
    assert Echo.calls == []
    with pytest.raises(ValueError, match="real_weight must be >= 0"):
        load_config(RefineConfig, "refine", "debug", ["method_args.real_weight=-1"],
                    values={"method": "test_echo", "ckpt": str(ckpt), "demos": str(demos)})


def test_added_round_trips_and_checks_its_lengths() -> None:
    a = Added(episodes=[3, 4], weights=[0.5, 2.0], first_window_only=True, info={"k": 1})
    assert Added.from_json(json.loads(json.dumps(a.to_json()))) == a
    with pytest.raises(ValueError, match="2 episodes but 1 weights"):
        Added(episodes=[1, 2], weights=[1.0])


def test_sources_say_what_an_episode_is() -> None:
    assert set(SOURCES) == {s.value for s in Source} and Source.PROPOSED in SOURCES
    assert set(EXECUTED) == {"rollout", "intervention", "guided"}  # never imagined or proposed
    assert np.array(["demo", "proposed"])[1] == Source.PROPOSED


def test_the_loop_names_no_method() -> None:
    """vla/refine/loop.py drives every method through the interface: no method's name appears in its code."""
    tree = ast.parse((ROOT / "vla/refine/loop.py").read_text())
    names = set(REFINE_METHODS.names()) - {"test_echo"}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    words = {w for s in strings for w in re.findall(r"[a-z_]+", s.lower())}
    idents = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not names & (words | {i.lower() for i in idents} | strings)
    assert "hasattr" not in idents
