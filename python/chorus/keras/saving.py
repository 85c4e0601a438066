"""keras.saving: load_model (a model saved by Model.save)."""
from chorus import _chorus

load_model = _chorus.load_model

__all__ = ["load_model"]
