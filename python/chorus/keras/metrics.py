"""keras.metrics: made from Keras's arguments (name, k, threshold, ...)."""
from chorus import _chorus
from chorus._factories import factory

Metric = _chorus.Metric

_POSITIONAL = {
    "Mean": ("name",),
    "Sum": ("name",),
    "Accuracy": ("name",),
    "BinaryAccuracy": ("name", "dtype", "threshold"),
    "CategoricalAccuracy": ("name",),
    "SparseCategoricalAccuracy": ("name",),
    "TopKCategoricalAccuracy": ("k", "name"),
    "SparseTopKCategoricalAccuracy": ("k", "name"),
    "MeanSquaredError": ("name",),
    "MeanAbsoluteError": ("name",),
}

for _name, _positional in _POSITIONAL.items():
    globals()[_name] = factory(_name, _positional, _chorus.metric_from_config, __name__)

__all__ = ["Metric", *_POSITIONAL]
