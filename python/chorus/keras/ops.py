"""keras.ops: chorus's op set on tensors, NumPy arrays and Python numbers."""
from chorus import _chorus

globals().update({name: getattr(_chorus.ops, name) for name in dir(_chorus.ops) if not name.startswith("_")})
