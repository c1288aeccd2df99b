"""benchmarks/bench_reguide.py: where a report's figures go in reguide.json (the paper's variant, the
others beside it, and the headline variant whose figures become the task's)."""

from __future__ import annotations

from tests.benchmarks.helpers import load_script

br = load_script("bench_reguide")


def test_place_entry_keeps_every_variant_and_moves_the_old_top_level_once() -> None:
    latent = {"base": "d20_s1000", "pcg_success": 0.3}
    entry = br.place_entry({}, latent, "", False)
    assert entry == latent  # the paper's variant: the top level
    entry = br.place_entry(entry, {"base": "d10", "pcg_success": 0.1}, "_state_pos", False)
    assert entry["base"] == "d20_s1000" and entry["variant_state_pos"]["base"] == "d10"
    head = {"base": "d10_s2000", "ft_success": 0.2}
    entry = br.place_entry(entry, head, "_state_pos_d10", True)
    assert entry["headline_variant"] == "variant_state_pos_d10" and entry["ft_success"] == 0.2
    assert entry["variant_latent"] == latent and entry["variant_state_pos"]["base"] == "d10"
    assert entry["variant_state_pos_d10"] == head and "pcg_success" not in entry  # no stale top-level key
    # the headline's report again: nothing moves twice; the paper's variant reported later stays beside it
    entry = br.place_entry(entry, {**head, "ft_success": 0.25}, "_state_pos_d10", True)
    assert entry["variant_latent"] == latent and entry["ft_success"] == 0.25
    entry = br.place_entry(entry, {"base": "d20_s1000", "pcg_success": 0.35}, "", False)
    assert entry["ft_success"] == 0.25 and entry["variant_latent"]["pcg_success"] == 0.35
