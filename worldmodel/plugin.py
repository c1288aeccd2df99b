"""What worldmodel/ adds to the stack (the `vla.plugins` entry point; see vla/plugins.py)."""

PROVIDES = {
    "refinement method": ("worldmodel.imagination_refine", "worldmodel.reguide_refine"),
    "policy spec": ("worldmodel.select", "worldmodel.reguide"),
    "cli": ("worldmodel.cli",),
    "config": {"worldmodel": "worldmodel.config:WMJobConfig"},
}
