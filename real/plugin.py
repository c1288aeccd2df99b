"""What real/ adds to the stack (the `vla.plugins` entry point; see vla/plugins.py)."""

PROVIDES = {
    "stage": ("real.stages",),
    "policy spec": ("real.selection",),
    "cli": ("real.cli", "real.session.cli"),
    "config": {"session": "real.session.runner:SessionConfig"},
}
