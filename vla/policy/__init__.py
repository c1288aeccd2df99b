"""The VLA policy: config (`config`), encoders (`encoders`, `language`), flow-matching math
(`flow`), the model (`model`), normalisation, checkpoints (`checkpoint`), the torch `Policy`
(`policy.load_torch_policy`), the ONNX export / runtime (`export`) and the policy specs that name
any of them (`specs.load_spec`).

Submodules are imported explicitly (`from vla.policy.policy import load_torch_policy`), so that e.g.
the ONNX runtime does not pay for the training code.
"""
