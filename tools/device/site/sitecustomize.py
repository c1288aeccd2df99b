"""Device-only shim: seed every InstructionEncoder with precomputed MiniLM embeddings, so no process
needs the 87 MB weight package; a string outside the table fails loudly instead of loading it."""
import os

_table = os.environ.get("VLA_INSTRUCTION_TABLE")
if _table:
    import numpy as np

    import vla.policy.language as _L

    _z = np.load(_table, allow_pickle=False)
    _TABLE = {str(t): e.astype(np.float32) for t, e in zip(_z["texts"], _z["emb"], strict=True)}
    _init = _L.InstructionEncoder.__init__

    def __init__(self, *a, **k):  # type: ignore[no-untyped-def]
        _init(self, *a, **k)
        self._cache.update(_TABLE)

    def _load(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("device shim: an instruction outside the precomputed table was encoded")

    _L.InstructionEncoder.__init__ = __init__
    _L.InstructionEncoder._load = _load
