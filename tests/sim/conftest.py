# MuJoCo picks its GL backend when first imported: select the headless one before any test module
# imports mujoco.
import sim.render  # noqa: F401
