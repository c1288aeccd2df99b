"""Instruction grounding: an instruction the policy never saw, replaced by the nearest phrasing it was
trained on when the sentence encoder is sure which meaning it is, and passed on as said otherwise.

Why: a VLA trained on a few phrasings per goal follows them and drifts on new wordings (on `sort`, one
training scored 0.84 with its training phrasings and 0.71 with held-out ones). Mapping free-form
language onto what the robot knows is how SayCan (arXiv 2204.01691) picks a skill: it scores the
instruction against every skill's text and takes the best. Ours differs in three ways:

- the texts are the training phrasings, grouped by meaning (the `data.instruction_aliases` file:
  `{instruction: [paraphrase, ...]}`, groups that share a phrasing merged; `vla train` saves these groups
  with the checkpoint, so `instruction_vocab=checkpoint` needs no file), scored with the policy's own
  frozen sentence embeddings (all-MiniLM-L6-v2), not by an LLM;
- the meaning is the group whose mean embedding is nearest after whitening by how phrasings of one
  meaning vary (a shrunk within-group covariance: linear discriminant analysis, Fisher 1936; shrinkage
  as Ledoit & Wolf 2004), not the single nearest phrasing. Plain cosine neighbours follow wording: "put
  the red cube in the black zone" is nearer "put the red cube in the white zone" than "move the red
  cube to the black zone", and leaving one of sort's 66 phrasings out, the nearest other phrasing was of
  another goal 42 times (`benchmarks/results/grounding.md`); the vocabulary itself shows which
  directions are template variation, and the whitening discounts them (0 of 66 wrong);
- it abstains: the nearest group must lead the next by `margin` in relative whitened distance and its
  phrasing reach `min_cos`, so an underspecified text ("sort the cubes", "put the red cube somewhere")
  or one naming something unknown ("the purple cube") reaches the policy unchanged instead of being
  turned into a confident guess at a goal nobody asked for.

What it cannot do: a one-word antonym the vocabulary does not spell out. Sentence embeddings of this
size hardly tell "turn the lock down" from "turn the lock up"; on Meta-World's phrasings, leaving one
out, 12 of 51 were grounded on the wrong task (the same-scene open/close, lock/unlock pairs and the
puck tasks). Ground on a vocabulary that lists the wordings its users say, and check it with
`python -m vla.policy.grounding ALIASES TEXT...`.

`ground` is the decision (pure); `GroundedEncoder` puts it in front of an `InstructionEncoder`, with
the same `encode` contract, so the torch policy and the ONNX export use it alike (`attach`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MARGIN = 0.05
DEFAULT_SHRINKAGE = 0.3
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


def whitener(vocab: np.ndarray, group: np.ndarray, shrinkage: float = DEFAULT_SHRINKAGE
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the group labels, their mean unit embeddings float[K, D], W float[D, D]) such that
    `|(x - mean) @ W|` measures x's distance to a group in units of how much phrasings of one meaning
    vary: the inverse square root of the pooled within-group covariance, shrunk towards its average
    variance by `shrinkage` (Ledoit-Wolf style: with tens of phrasings in hundreds of dimensions the
    raw covariance is singular). A vocabulary with one phrasing per group has no within-group spread:
    W is the identity, nearest group mean by plain distance."""
    v = _unit(np.asarray(vocab, np.float64))
    labels, idx = np.unique(np.asarray(group), return_inverse=True)
    means = np.stack([v[idx == k].mean(0) for k in range(len(labels))])
    resid = v - means[idx]
    d = v.shape[1]
    cov = resid.T @ resid / max(len(v) - len(labels), 1)
    scale = float(np.trace(cov)) / d
    if scale <= 1e-12:
        return labels, means, np.eye(d)
    cov = (1.0 - shrinkage) * cov + shrinkage * scale * np.eye(d)
    vals, vecs = np.linalg.eigh(cov)
    return labels, means, vecs / np.sqrt(np.maximum(vals, 1e-12 * scale))


def scores(query: np.ndarray, vocab: np.ndarray, group: np.ndarray, shrinkage: float = DEFAULT_SHRINKAGE
           ) -> tuple[int, float, float]:
    """(index of the phrasing that stands for `query` (float[D]): the most similar row of `vocab`
    (float[N, D]) within the group whose mean is nearest in the whitened metric (`whitener`; `group`:
    int[N]), that phrasing's cosine similarity, and the group's relative lead (d2 - d1) / d2 over the
    next group's whitened distance, in [0, 1]; -inf with a single group)."""
    q = np.asarray(query, np.float64)
    v = np.asarray(vocab, np.float64)
    g = np.asarray(group)
    if v.ndim != 2 or q.shape != (v.shape[1],) or g.shape != (v.shape[0],):
        raise ValueError(f"shapes: query {q.shape}, vocab {v.shape}, group {g.shape}")
    labels, means, w = whitener(v, g, shrinkage)
    qu = _unit(q)
    dist = np.linalg.norm((means - qu) @ w, axis=1)
    order = np.argsort(dist, kind="stable")
    sims = _unit(v) @ qu
    sims[g != labels[order[0]]] = -np.inf
    best = int(np.argmax(sims))
    if len(labels) < 2:
        return best, float(sims[best]), float("-inf")
    d1, d2 = dist[order[0]], dist[order[1]]
    return best, float(sims[best]), float((d2 - d1) / d2) if d2 > 0 else 0.0


def ground(query: np.ndarray, vocab: np.ndarray, group: np.ndarray, margin: float = DEFAULT_MARGIN,
           min_cos: float = DEFAULT_MIN_COS, shrinkage: float = DEFAULT_SHRINKAGE) -> int | None:
    """Which vocabulary phrasing stands for `query` (`scores`): the chosen group's most similar phrasing
    when the group leads the next by at least `margin` (relative whitened distance) and that phrasing's
    cosine similarity is at least `min_cos`; None (abstain) otherwise, and always with a single group
    (nothing to tell it from)."""
    best, cos, lead = scores(query, vocab, group, shrinkage)
    return best if cos >= min_cos and lead >= margin else None


def _unit(x: np.ndarray) -> np.ndarray:
    return x / (np.linalg.norm(x, axis=-1, keepdims=True) + 1e-12)


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

    def warm_up(self) -> None:
        """Load the base's model and embed the vocabulary now, not when the first unseen text comes."""
        warm = getattr(self.base, "warm_up", None)
        if warm is not None:
            warm()
        self._vocabulary()

    def has(self, text: str) -> bool:
        """Whether `encode([text])` is lookups only: its grounding decided and its target embedded."""
        if text in self._known:
            return self.base.has(text)
        with self._lock:
            choice = self._choice.get(text)
        return choice is not None and self.base.has(choice or text)

    def _vocabulary(self) -> np.ndarray:
        # Encoded outside the lock: a caller whose text is already decided must not wait on it.
        with self._lock:
            vocab = self._vocab
        if vocab is None:
            vocab = self.base.encode(self.phrasings)
            with self._lock:
                self._vocab = vocab
        return vocab

    def _target(self, text: str) -> str:
        if text in self._known:
            return text
        with self._lock:
            if text in self._choice:
                return self._choice[text] or text
        vocab = self._vocabulary()
        i = ground(self.base.encode([text])[0], vocab, self.group, self.margin, self.min_cos)
        choice = "" if i is None else self.phrasings[i]
        with self._lock:
            self._choice[text] = choice
        return choice or text

    def encode(self, instructions: list[str]) -> np.ndarray:
        return self.base.encode([self._target(self.check(t)) for t in instructions])


def check_thresholds(margin: float, min_cos: float) -> None:
    if not (np.isfinite(margin) and 0.0 <= margin <= 1.0):
        raise ValueError(f"instruction_vocab_margin must be a relative distance lead in [0, 1], got {margin}")
    if not (np.isfinite(min_cos) and -1.0 <= min_cos <= 1.0):
        raise ValueError(f"instruction_vocab_min_cos must be a cosine in [-1, 1], got {min_cos}")


# `instruction_vocab=checkpoint`: the phrasing groups the policy's own checkpoint carries (its training
# instructions with their aliases, saved by `vla train`)
OWN = "checkpoint"


def load_vocab(path: str | Path) -> list[tuple[str, ...]]:
    """The phrasing groups of an aliases file (`vla.data.dataset.load_instruction_aliases`'s format and
    checks), or those a checkpoint or ONNX export folder carries; they must tell at least two meanings
    apart."""
    if Path(path).is_dir():
        from vla.policy.checkpoint import load_instruction_groups

        return check_groups(load_instruction_groups(path), str(path))
    from vla.data.dataset import load_instruction_aliases

    return check_groups(phrasing_groups(load_instruction_aliases(path)), str(path))


def check_groups(groups: list[tuple[str, ...]], source: str) -> list[tuple[str, ...]]:
    if len(groups) < 2:
        raise ValueError(f"{source}: its phrasings form {len(groups)} group(s) of meaning; grounding needs >= 2 "
                         "to choose between (a checkpoint saved before it carried its training phrasings, or "
                         "trained on one instruction: pass its aliases file)")
    return groups


def attach(policy: Any, path: str | Path, margin: float = DEFAULT_MARGIN,
           min_cos: float = DEFAULT_MIN_COS) -> GroundedEncoder:
    """Ground `policy`'s instructions on the phrasings of `path`: an aliases file, a checkpoint folder,
    or `OWN` ("checkpoint") for the groups the policy itself was loaded with. The torch policy's model
    encoder or the ONNX export's, whichever it has, is wrapped (this policy only: the process-wide
    encoder other policies share is left as it is). Returns the encoder, also kept as `policy.grounding`."""
    holder = getattr(policy, "model", None)
    if holder is None or not hasattr(holder, "language"):
        holder = policy
    if not hasattr(holder, "language"):
        raise ValueError(f"instruction_vocab: {type(policy).__name__} takes no instruction, nothing to ground")
    if str(path) == OWN:
        groups = check_groups(list(getattr(holder, "instruction_groups", [])), f"instruction_vocab={OWN}")
    else:
        groups = load_vocab(path)
    enc = GroundedEncoder(holder.language, groups, margin, min_cos)
    holder.language = enc
    policy.grounding = enc
    return enc


def main(argv: list[str] | None = None) -> None:
    """`python -m vla.policy.grounding ALIASES TEXT [TEXT ...]`: what each text would be grounded on, with
    the similarity and the lead that decide it, to check a vocabulary and its margin before deploying."""
    import argparse

    from vla.policy.language import shared_encoder

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("aliases", help="the aliases file ({instruction: [paraphrase, ...]}), or a checkpoint or ONNX "
                    "export folder (the training phrasings it carries)")
    ap.add_argument("texts", nargs="+")
    ap.add_argument("--margin", type=float, default=DEFAULT_MARGIN)
    ap.add_argument("--min-cos", type=float, default=DEFAULT_MIN_COS)
    args = ap.parse_args(argv)
    try:
        enc = GroundedEncoder(shared_encoder(), load_vocab(args.aliases), args.margin, args.min_cos)
    except (OSError, ValueError, RuntimeError) as e:  # RuntimeError: a damaged checkpoint (CheckpointError)
        raise SystemExit(f"error: {e}") from None
    vocab = enc.base.encode(enc.phrasings)
    for text in args.texts:
        try:
            enc.check(text)
        except ValueError as e:
            raise SystemExit(f"error: {text!r}: {e}") from None
        best, cos, lead = scores(enc.base.encode([text])[0], vocab, enc.group)
        enc.encode([text])
        print(f"{text!r}: {'-> ' + repr(enc.grounded_to(text)) if enc.grounded_to(text) else 'as said'} "
              f"(nearest meaning's closest phrasing {enc.phrasings[best]!r}, cosine {cos:.3f}, lead {lead:+.3f} "
              f"against the margin {args.margin:g})")


if __name__ == "__main__":
    main()
