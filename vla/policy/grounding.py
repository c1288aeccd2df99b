"""Instruction grounding: an instruction the policy never saw, replaced by the nearest phrasing it was
trained on when the sentence encoder is sure which meaning it is, and passed on as said otherwise.

Why: a VLA trained on a few phrasings per goal follows them and drifts on new wordings (on `sort`, one
training scored 0.84 with its training phrasings and 0.71 with held-out ones). Mapping free-form
language onto what the robot knows is how SayCan (arXiv 2204.01691) picks a skill: it scores the
instruction against every skill's text and takes the best. Ours differs in two ways:

- the texts are the training phrasings, grouped by meaning (the `data.instruction_aliases` file:
  `{instruction: [paraphrase, ...]}`, groups that share a phrasing merged), scored by the cosine
  similarity of the policy's own frozen sentence embeddings (all-MiniLM-L6-v2), not by an LLM;
- it abstains: the best group must beat the second best by `margin` (and reach `min_cos`), so an
  underspecified text ("sort the cubes", "put the red cube somewhere": within 0.03 of two goals) or
  one naming something unknown ("the purple cube") reaches the policy unchanged instead of being
  turned into a confident guess at a goal nobody asked for.

`ground` is the decision (pure); `GroundedEncoder` puts it in front of an `InstructionEncoder`, with
the same `encode` contract, so the torch policy and the ONNX export use it alike (`attach`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MARGIN = 0.03
DEFAULT_MIN_COS = 0.5


def phrasing_groups(aliases: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """Phrasings grouped by meaning: each key with its paraphrases is one group, and groups that share
    a phrasing are one (an aliases file lists every training phrasing of a goal with the others as
    its paraphrases). Sorted within and across groups, so the result does not depend on file order."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for key, paraphrases in aliases.items():
        for p in (key, *paraphrases):
            a, b = find(key), find(p)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for p in parent:
        groups.setdefault(find(p), []).append(p)
    return sorted(tuple(sorted(g)) for g in groups.values())


def scores(query: np.ndarray, vocab: np.ndarray, group: np.ndarray) -> tuple[int, float, float]:
    """(index of the most similar row of `vocab` (float[N, D]) to `query` (float[D]), its cosine
    similarity, its lead over the best row of any other group (`group`: int[N]); the lead is -inf with a
    single group)."""
    q = np.asarray(query, np.float64)
    v = np.asarray(vocab, np.float64)
    g = np.asarray(group)
    if v.ndim != 2 or q.shape != (v.shape[1],) or g.shape != (v.shape[0],):
        raise ValueError(f"shapes: query {q.shape}, vocab {v.shape}, group {g.shape}")
    sims = v @ q / (np.linalg.norm(v, axis=1) * np.linalg.norm(q) + 1e-12)
    best = int(np.argmax(sims))
    others = sims[g != g[best]]
    return best, float(sims[best]), float(sims[best] - others.max()) if others.size else float("-inf")


def ground(query: np.ndarray, vocab: np.ndarray, group: np.ndarray, margin: float = DEFAULT_MARGIN,
           min_cos: float = DEFAULT_MIN_COS) -> int | None:
    """Which vocabulary phrasing stands for `query`: the most similar row of `vocab` when its group leads
    every other group's best by at least `margin` in cosine similarity and the similarity is at least
    `min_cos`; None (abstain) otherwise, and always with a single group (nothing to tell it from)."""
    best, cos, lead = scores(query, vocab, group)
    return best if cos >= min_cos and lead >= margin else None


class GroundedEncoder:
    """An `InstructionEncoder` whose unseen instructions are grounded (`ground`) onto `groups`' phrasings.
    Known phrasings and abstentions encode as themselves. `grounded_to(text)` says what a text was
    replaced by ("" = nothing), for the evaluator's records."""

    def __init__(self, base: Any, groups: Sequence[Sequence[str]], margin: float = DEFAULT_MARGIN,
                 min_cos: float = DEFAULT_MIN_COS) -> None:
        check_thresholds(margin, min_cos)
        self.base, self.margin, self.min_cos = base, float(margin), float(min_cos)
        self.phrasings = [p for g in groups for p in g]
        if len({*self.phrasings}) != len(self.phrasings) or len(groups) < 2:
            raise ValueError(f"need >= 2 disjoint groups of phrasings, got {len(groups)} groups")
        self.group = np.array([i for i, g in enumerate(groups) for _ in g])
        self._known = set(self.phrasings)
        self._vocab: np.ndarray | None = None  # encoded on first use: the base may load its model lazily
        self._choice: dict[str, str] = {}
        self._lock = threading.Lock()

    def check(self, instruction: object) -> str:
        return self.base.check(instruction)

    def preload(self, table: dict[str, np.ndarray]) -> None:
        self.base.preload(table)

    def cached(self) -> dict[str, np.ndarray]:
        return self.base.cached()

    def grounded_to(self, text: str) -> str:
        with self._lock:
            return self._choice.get(text, "")

    def _target(self, text: str) -> str:
        if text in self._known:
            return text
        with self._lock:
            if text in self._choice:
                return self._choice[text] or text
            if self._vocab is None:
                self._vocab = self.base.encode(self.phrasings)
            vocab = self._vocab
        i = ground(self.base.encode([text])[0], vocab, self.group, self.margin, self.min_cos)
        choice = "" if i is None else self.phrasings[i]
        with self._lock:
            self._choice[text] = choice
        return choice or text

    def encode(self, instructions: list[str]) -> np.ndarray:
        return self.base.encode([self._target(self.check(t)) for t in instructions])


def check_thresholds(margin: float, min_cos: float) -> None:
    if not (np.isfinite(margin) and 0.0 <= margin <= 2.0):
        raise ValueError(f"instruction_vocab_margin must be a cosine gap in [0, 2], got {margin}")
    if not (np.isfinite(min_cos) and -1.0 <= min_cos <= 1.0):
        raise ValueError(f"instruction_vocab_min_cos must be a cosine in [-1, 1], got {min_cos}")


def load_vocab(path: str | Path) -> list[tuple[str, ...]]:
    """The phrasing groups of an aliases file (`vla.data.dataset.load_instruction_aliases`'s format and
    checks), which must tell at least two meanings apart."""
    from vla.data.dataset import load_instruction_aliases

    groups = phrasing_groups(load_instruction_aliases(path))
    if len(groups) < 2:
        raise ValueError(f"{path}: its phrasings form {len(groups)} group of meaning; grounding needs >= 2 to "
                         "choose between")
    return groups


def attach(policy: Any, path: str | Path, margin: float = DEFAULT_MARGIN,
           min_cos: float = DEFAULT_MIN_COS) -> GroundedEncoder:
    """Ground `policy`'s instructions on the phrasings of the aliases file `path`: the torch policy's
    model encoder or the ONNX export's, whichever it has (this policy only: the process-wide encoder
    other policies share is left as it is). Returns the encoder, also kept as `policy.grounding`."""
    holder = getattr(policy, "model", None)
    if holder is None or not hasattr(holder, "language"):
        holder = policy
    if not hasattr(holder, "language"):
        raise ValueError(f"instruction_vocab: {type(policy).__name__} takes no instruction, nothing to ground")
    enc = GroundedEncoder(holder.language, load_vocab(path), margin, min_cos)
    holder.language = enc
    policy.grounding = enc
    return enc


def main(argv: list[str] | None = None) -> None:
    """`python -m vla.policy.grounding ALIASES TEXT [TEXT ...]`: what each text would be grounded on, with
    the similarity and the lead that decide it, to check a vocabulary and its margin before deploying."""
    import argparse

    from vla.policy.language import shared_encoder

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("aliases", help="the aliases file: {instruction: [paraphrase, ...]}")
    ap.add_argument("texts", nargs="+")
    ap.add_argument("--margin", type=float, default=DEFAULT_MARGIN)
    ap.add_argument("--min-cos", type=float, default=DEFAULT_MIN_COS)
    args = ap.parse_args(argv)
    try:
        enc = GroundedEncoder(shared_encoder(), load_vocab(args.aliases), args.margin, args.min_cos)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    vocab = enc.base.encode(enc.phrasings)
    for text in args.texts:
        best, cos, lead = scores(enc.base.encode([enc.check(text)])[0], vocab, enc.group)
        enc.encode([text])
        print(f"{text!r}: {'-> ' + repr(enc.grounded_to(text)) if enc.grounded_to(text) else 'as said'} "
              f"(nearest {enc.phrasings[best]!r}, cosine {cos:.3f}, lead {lead:+.3f})")


if __name__ == "__main__":
    main()
