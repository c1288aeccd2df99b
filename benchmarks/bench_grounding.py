"""How often instruction grounding (`vla.policy.grounding`) picks the right meaning, abstains, or picks
a wrong one, per margin, on phrasings it was not tuned on. No simulator: only the policy's frozen
sentence encoder (all-MiniLM-L6-v2, offline).

This asks whether a rule read off `sort`'s held-out phrasings and vague probes carries over:

- `sort_heldout`: sort's 12 held-out phrasings against its training and augmentation phrasings (the
  vocabulary the margin was chosen on; for reference);
- `sort_loo`: each of sort's 66 vocabulary phrasings grounded against the other 65 (leave one out):
  the nearest other phrasings differ from it in one word, the cube or the zone;
- `metaworld_loo`: each of the 51 Meta-World phrasings (17 tasks x 3, `sim.tasks.metaworld_tasks`,
  with the same-scene pairs drawer/window/door/faucet open/close) against the other 50, a vocabulary
  written by someone else for another purpose;
- `libero_goal_loo`: LIBERO-Goal's ten one-scene instructions with two paraphrases each, leave one out;
- `*_vague`: texts that name no single goal of the vocabulary, which should pass unchanged.

Both rules are shown: the whitened nearest group mean (`vla.policy.grounding.scores`) and the nearest
single phrasing it replaced.

A wrong grounding turns a request into a confident action on the wrong goal; an abstention passes the
text to the policy as said (the policy's own paraphrase gap). So the figure that matters is wrong,
then abstained.

    python benchmarks/bench_grounding.py            # grounding.json + grounding.md in benchmarks/results
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from results_io import write_result

from vla.policy.grounding import DEFAULT_MARGIN, DEFAULT_MIN_COS, DEFAULT_SHRINKAGE, phrasing_groups, scores

RESULTS = Path(__file__).parent / "results"
HELDOUT_SET = "libero_goal_loo"  # written before either rule was run on it: nothing was chosen on it
MARGINS = (0.0, 0.02, 0.05, 0.08, 0.12)  # relative whitened distance lead
OLD_MARGINS = (0.0, 0.03, 0.05)  # cosine lead of the nearest-phrasing rule (its default was 0.03)
SORT_VAGUE = ("sort the cubes", "put the red cube somewhere", "put the purple cube in the white zone",
              "do the task", "move it to the white zone", "put a cube in the black zone", "tidy up the table")
MW_VAGUE = ("do the task", "open it", "close it", "turn the handle", "move the object", "use the robot",
            "open something")


# LIBERO-Goal's ten instructions (one scene, the instruction picks the goal; Liu et al., arXiv 2306.03310),
# each with two paraphrases written for this benchmark before any grounding rule was run on them
LIBERO_GOAL = (
    ("open the middle drawer of the cabinet", "pull the middle drawer open", "open the cabinet's middle drawer"),
    ("put the bowl on the stove", "place the bowl onto the stove", "move the bowl to the stove"),
    ("put the wine bottle on top of the cabinet", "place the wine bottle on the cabinet",
     "set the bottle of wine on top of the cabinet"),
    ("open the top drawer and put the bowl inside", "open the upper drawer and place the bowl in it",
     "put the bowl inside the top drawer after opening it"),
    ("put the bowl on top of the cabinet", "place the bowl on the cabinet", "set the bowl on top of the cabinet"),
    ("push the plate to the front of the stove", "slide the plate in front of the stove",
     "push the plate toward the stove's front"),
    ("put the cream cheese in the bowl", "place the cream cheese into the bowl", "drop the cream cheese in the bowl"),
    ("turn on the stove", "switch the stove on", "turn the stove burner on"),
    ("put the bowl on the plate", "place the bowl onto the plate", "set the bowl on the plate"),
    ("put the wine bottle on the rack", "place the wine bottle in the rack",
     "put the bottle of wine onto the wine rack"),
)


def sort_sets() -> tuple[list[tuple[str, ...]], list[tuple[str, int]]]:
    from sim.tasks.native.sort import GOALS, HELDOUT_TEMPLATES, instruction_aliases, instruction_for

    groups = phrasing_groups(instruction_aliases())
    index = {p: i for i, g in enumerate(groups) for p in g}
    heldout = []
    for goal in GOALS:
        k = index[instruction_for(goal, "put the {cube} cube in the {zone} zone")]
        heldout += [(instruction_for(goal, t), k) for t in HELDOUT_TEMPLATES]
    return groups, heldout


def metaworld_groups() -> list[tuple[str, ...]]:
    from sim.tasks.metaworld_tasks import INSTRUCTIONS

    return [tuple(v) for v in INSTRUCTIONS.values()]


def nearest_phrasing(query: np.ndarray, vocab: np.ndarray, group: np.ndarray) -> tuple[int, float, float]:
    """The rule grounding used before the whitened group means: the single most similar phrasing by cosine, its lead
    over the best phrasing of any other group; kept here as the reference."""
    sims = vocab @ query / (np.linalg.norm(vocab, axis=1) * np.linalg.norm(query) + 1e-12)
    best = int(np.argmax(sims))
    return best, float(sims[best]), float(sims[best] - sims[group != group[best]].max())


def tally(outcomes: list[int | None], truths: list[int | None]) -> dict[str, int]:
    """right / abstained / wrong counts; a truth of None (a vague probe) counts any choice as wrong."""
    right = sum(o is not None and o == t for o, t in zip(outcomes, truths, strict=True))
    abstained = sum(o is None for o in outcomes)
    return {"n": len(outcomes), "right": right, "abstained": abstained, "wrong": len(outcomes) - right - abstained}


def evaluate(encode, groups: list[tuple[str, ...]], queries: list[tuple[str, int | None]], leave_one_out: bool,
             rule, margins: tuple[float, ...]) -> dict[str, dict[str, int]]:
    """Each query scored once by `rule` (`scores`' contract) against the vocabulary (without the query
    itself when `leave_one_out`), then decided at every margin with the default minimum cosine."""
    phrasings = [p for g in groups for p in g]
    group = np.array([i for i, g in enumerate(groups) for _ in g])
    vocab = encode(phrasings)
    scored = []
    for (text, _), e in zip(queries, encode([t for t, _ in queries]), strict=True):
        keep = np.array([p != text for p in phrasings]) if leave_one_out else np.ones(len(phrasings), bool)
        best, cos, lead = rule(e, vocab[keep], group[keep])
        scored.append((int(group[keep][best]), cos, lead))
    truths = [t for _, t in queries]
    return {f"{m:g}": tally([g if cos >= DEFAULT_MIN_COS and lead >= m else None for g, cos, lead in scored], truths)
            for m in margins}


def measure() -> dict:
    from vla.policy.language import shared_encoder

    enc = shared_encoder()
    encode = lambda texts: np.asarray(enc.encode(list(texts)), np.float64)  # noqa: E731
    sort_groups, sort_heldout = sort_sets()
    mw = metaworld_groups()
    libero = [tuple(g) for g in LIBERO_GOAL]
    loo = lambda groups: [(p, i) for i, g in enumerate(groups) for p in g]  # noqa: E731
    sets = {"sort_heldout": (sort_groups, sort_heldout, False),
            "sort_loo": (sort_groups, loo(sort_groups), True),
            "sort_vague": (sort_groups, [(t, None) for t in SORT_VAGUE], False),
            "metaworld_loo": (mw, loo(mw), True),
            "metaworld_vague": (mw, [(t, None) for t in MW_VAGUE], False),
            "libero_goal_loo": (libero, loo(libero), True)}
    whitened = lambda q, v, g: scores(q, v, g, DEFAULT_SHRINKAGE)  # noqa: E731
    return {
        "encoder": type(enc).__name__,
        "min_cos": DEFAULT_MIN_COS,
        "default_margin": DEFAULT_MARGIN,
        "shrinkage": DEFAULT_SHRINKAGE,
        "sets": {k: evaluate(encode, *v, whitened, MARGINS) for k, v in sets.items()},
        "nearest_phrasing_sets": {k: evaluate(encode, *v, nearest_phrasing, OLD_MARGINS) for k, v in sets.items()},
    }


def table(sets: dict, margins: tuple[float, ...], unit: str) -> list[str]:
    lines = ["| set | n | " + " | ".join(f"{unit} {m:g}" for m in margins) + " |", "|---|---|" + "---|" * len(margins)]
    for name, by_margin in sets.items():
        n = next(iter(by_margin.values()))["n"]
        cells = [f"{c['right']} / {c['abstained']} / **{c['wrong']}**" for c in by_margin.values()]
        lines.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    return lines


def render(res: dict) -> str:
    total = lambda sets, m: sum(c[f"{m:g}"]["wrong"] for c in sets.values())  # noqa: E731
    return "\n".join([
        "# Instruction grounding: right, abstained, wrong", "",
        "Command: `python benchmarks/bench_grounding.py` (what each set is: its docstring). Each cell: right / "
        "abstained / **wrong** of n; a vague probe names no single goal, so any choice is wrong. Minimum cosine "
        f"{res['min_cos']} throughout.", "",
        f"## The rule (`vla.policy.grounding`): nearest group mean, whitened (shrinkage {res['shrinkage']})", "",
        f"Lead: relative whitened distance (d2 - d1) / d2; the default margin is {res['default_margin']}.", "",
        *table(res["sets"], MARGINS, "lead"), "",
        "## Before: the nearest single phrasing by cosine (stop 44's rule)", "",
        "Lead: cosine of the nearest phrasing minus the best of any other group; its default was 0.03.", "",
        *table(res["nearest_phrasing_sets"], OLD_MARGINS, "lead"), "",
        f"Wrong groundings over all sets: {total(res['nearest_phrasing_sets'], 0.03)} with the nearest phrasing at "
        f"0.03, {total(res['sets'], res['default_margin'])} with the whitened rule at {res['default_margin']}.",
        "",
        "- The margins were chosen on these sets (sort's held-out phrasings must all ground, so the margin cannot "
        "rise much above 0.05); `libero_goal_loo` (LIBERO-Goal's ten instructions, two paraphrases each written "
        "before either rule was run on them) is the only set no choice was read off, and every rule gets it right.",
        "- What stays wrong is mostly Meta-World's one-word antonyms (a held-out 'turn the lock down' against a "
        "vocabulary with 'turn the lock up' and 'lock the door') and its two puck tasks, whose phrasings overlap "
        "('put the puck on the target'). A sentence encoder of this size does not resolve them; a vocabulary "
        "that spells out the wordings users say does.",
        "- Where the whitened rule is worse: two of sort's vague probes name only a zone ('move it to the white "
        "zone', 'put a cube in the black zone'); the old rule abstained on both, the new one grounds them on a "
        "cube of that zone. A margin of 0.08 abstains on them and on the other vague probes, but also on 5 of "
        "sort's 12 held-out phrasings. Nor does a test of membership separate them: the whitened distance to the "
        "nearest group mean is 21-39 for sort's held-out phrasings and 24-71 for its vague probes.", ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    res = measure()
    # the held-out figure: the one set no margin or rule was read off, at the default margin
    held = res["sets"][HELDOUT_SET][f"{res['default_margin']:g}"]
    res |= {"heldout_set": HELDOUT_SET, "heldout_n": held["n"], "heldout_right": held["right"],
            "heldout_abstained": held["abstained"], "heldout_wrong": held["wrong"]}
    args.out.mkdir(parents=True, exist_ok=True)
    write_result("grounding", res, seed_range="none", results=args.out,
                 key_figures=["heldout_wrong", "heldout_right", "heldout_n", "default_margin"],
                 held_out=f"{HELDOUT_SET}: phrasings no margin or rule was chosen on (the margin was chosen on "
                          "sort_heldout and read against sort_loo and metaworld_loo)")
    (args.out / "grounding.md").write_text(render(res))
    print(render(res))


if __name__ == "__main__":
    main()
