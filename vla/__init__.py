"""The VLA core: data, policy, training, refinement, evaluation (see docs/architecture.md)."""

import os
import sys

# ONNX Runtime (1.32 on Linux) starts Microsoft's OneDS telemetry when its library loads: about 9 s
# after a session is made it resolves mobile.events.data.microsoft.com through the machine's DNS
# server, and keeps retrying. The stack talks only to 127.0.0.1, so it is off unless the user sets
# the variable. The library reads it once, at load, hence here: every import of onnxruntime in the
# stack comes after `vla` (OnnxPolicy warns when one came before). Child processes inherit it.
ORT_LOADED_FIRST = "onnxruntime" in sys.modules and "ORT_DISABLE_TELEMETRY" not in os.environ
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
