from tests.vla.policy.conftest import one_torch_thread

__all__ = ["one_torch_thread"]
