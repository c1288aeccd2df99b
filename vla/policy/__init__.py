"""The VLA policy: config (`config`), encoders (`encoders`, `language`), flow-matching math
(`flow`), the model (`model`), normalisation, checkpoints (`checkpoint`), the torch `Policy`
(`policy.load_policy`) and the ONNX export / runtime (`export`).

Submodules are imported explicitly (`from vla.policy.policy import load_policy`), so that e.g.
the ONNX runtime does not pay for the training code.
"""
