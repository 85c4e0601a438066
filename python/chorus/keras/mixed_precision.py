"""keras.mixed_precision: the global dtype policy ("float32", "mixed_bfloat16")."""
from chorus import _chorus

set_global_policy = _chorus.set_global_policy
global_policy = _chorus.global_policy


__all__ = ["global_policy", "set_global_policy"]
