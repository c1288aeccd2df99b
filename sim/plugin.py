"""What sim/ adds to the stack (the `vla.plugins` entry point; see vla/plugins.py)."""

PROVIDES = {
    "task": ("sim.tasks",),
    "stage": ("sim.stages", "sim.perception_stage"),
    "evaluator": ("sim.evaluate",),
    "cli": ("sim.cli",),
    "config": {"eval": "sim.evaluate:EvalConfig"},
}
