"""The built-in refinement methods, one file each; importing this package registers them in
`vla.registry.REFINE_METHODS` (worldmodel/ registers imagination and ReGuide the same way)."""

from vla.refine.methods import awr, dagger, dsrl, filtered_bc, habc, hg_dagger, pa_rl, rac, sft  # noqa: F401
