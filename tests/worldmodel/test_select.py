"""Test-time selection through the world model, with a real (tiny) model and policy."""

from pathlib import Path

import numpy as np
import pytest

from sim.policies import RandomPolicy
from worldmodel.checkpoint import load_checkpoint
from worldmodel.imagined_env import start_states
from worldmodel.select import WorldModelSelection, make_selection, parse_spec

pytestmark = pytest.mark.slow


def test_selection_returns_one_of_the_sampled_chunks_with_the_best_score(trained_wm: Path,
                                                                        pick_place_store: Path) -> None:
    model = load_checkpoint(trained_wm)[0]
    st = start_states(pick_place_store, model, episodes=np.arange(2))
    obs = [{"images": {}, "state": st.state[i], "instruction": st.instructions[i], "timestamp": 0.0} for i in range(2)]

    class Recorder(RandomPolicy):
        def sample_chunk(self, obs_batch, prefix=None, guidance=None):
            self.last = super().sample_chunk(obs_batch)
            return self.last

    policy = Recorder(7, horizon=16, seed=0)
    sel = WorldModelSelection(policy, model, k=5, chunks=2)
    out = sel.sample_chunk(obs)
    assert out.shape == (2, 16, 7)
    assert sel.last_scores is not None and sel.last_scores.shape == (2, 5)
    # the returned chunk is the candidate with the highest score (the policy's last call was the
    # imagined continuation, so the candidates are regenerated from the same seed to compare)
    policy.reset(0)
    cands = policy.sample_chunk([o for o in obs for _ in range(5)]).reshape(2, 5, 16, 7)
    best = sel.last_scores.argmax(1)
    assert np.array_equal(out, cands[np.arange(2), best])


def test_spec_parsing_names_bad_keys(trained_wm: Path) -> None:
    assert parse_spec("ckpt=a,wm=b,k=4") == {"ckpt": "a", "wm": "b", "k": "4"}
    with pytest.raises(ValueError, match="unknown key 'kk'"):
        parse_spec("ckpt=a,wm=b,kk=4")
    with pytest.raises(ValueError, match="missing wm="):
        parse_spec("ckpt=a")
    sel = make_selection(f"ckpt=x,wm={trained_wm},k=3", load=lambda s: RandomPolicy(7, horizon=16))
    assert sel.k == 3 and sel.chunks == 1
