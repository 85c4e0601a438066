"""keras.losses: made from Keras's arguments (reduction, name, from_logits, ...)."""
from chorus import _chorus
from chorus._factories import factory

Loss = _chorus.Loss

_POSITIONAL = {
    "MeanSquaredError": (),
    "MeanAbsoluteError": (),
    "Huber": ("delta",),
    "BinaryCrossentropy": ("from_logits", "label_smoothing"),
    "CategoricalCrossentropy": ("from_logits", "label_smoothing"),
    "SparseCategoricalCrossentropy": ("from_logits",),
}

for _name, _positional in _POSITIONAL.items():
    globals()[_name] = factory(_name, _positional, _chorus.loss_from_config, __name__)

__all__ = ["Loss", *_POSITIONAL]
