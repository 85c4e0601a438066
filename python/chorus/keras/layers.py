"""keras.layers: every chorus layer, made from Keras's arguments, and `Layer` to subclass."""
from chorus import _chorus
from chorus._factories import factory
from chorus.keras._tracking import Tracking, base_with_instances_of

# Keras 3's positional parameters; the rest are keyword arguments.
_POSITIONAL = {
    "Activation": ("activation",),
    "Add": (),
    "BatchNormalization": ("axis", "momentum", "epsilon"),
    "Concatenate": ("axis",),
    "Dense": ("units", "activation", "use_bias"),
    "Dropout": ("rate", "noise_shape", "seed"),
    "EinsumDense": ("equation", "output_shape", "activation", "bias_axes"),
    "Embedding": ("input_dim", "output_dim"),
    "Flatten": (),
    "Hashing": ("num_bins",),
    "IntegerLookup": ("max_tokens", "num_oov_indices", "mask_token", "oov_token", "vocabulary"),
    "LayerNormalization": ("axis", "epsilon"),
    "MultiHeadAttention": ("num_heads", "key_dim", "value_dim", "dropout"),
    "Normalization": ("axis", "mean", "variance"),
    "Reshape": ("target_shape",),
    "StringLookup": ("max_tokens", "num_oov_indices", "mask_token", "oov_token", "vocabulary"),
    "TextVectorization": ("max_tokens", "standardize", "split", "ngrams", "output_mode", "output_sequence_length"),
}
def make_layer(class_name, config):
    return _chorus.layer_from_config(class_name, config)


for _name, _positional in _POSITIONAL.items():
    globals()[_name] = factory(_name, _positional, make_layer, __name__)


def InputLayer(shape=None, batch_size=None, dtype="float32", name=None, batch_shape=None):
    """keras.layers.InputLayer: the entry of a Sequential model, (batch, *shape)."""
    if batch_shape is None:
        if shape is None:
            raise ValueError("InputLayer: expected shape or batch_shape")
        batch_shape = [batch_size, *shape]
    return _chorus.layer_from_config(
        "InputLayer", {"batch_shape": list(batch_shape), "dtype": dtype, "name": name or ""})


def Input(shape=None, batch_size=None, dtype="float32", name=None):
    """keras.Input: a symbolic tensor of shape (None, *shape) for the functional API."""
    if shape is None:
        raise ValueError("Input: expected a shape (the batch axis excluded)")
    if batch_size is not None:
        raise NotImplementedError("Input(batch_size=...): chorus's symbolic batch is always None")
    return _chorus.Input(list(shape), dtype, name or "")


class Layer(Tracking, _chorus.Layer, metaclass=base_with_instances_of(_chorus.Layer)):
    """keras.layers.Layer, to subclass: define build(input_shape) and call(inputs[, training]).

    Weights come from self.add_weight(shape, initializer, dtype, trainable, name); layers
    assigned as attributes are tracked as sublayers.
    """

    _chorus_base = True

    def __init__(self, name=None, trainable=True, dtype=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}")
        if dtype is not None:
            raise NotImplementedError(f"{type(self).__name__}(dtype=...): set a dtype policy globally")
        _chorus.Layer.__init__(self, type(self).__name__, name or "")
        self._retain_python_object()
        self.trainable = trainable

    def call(self, inputs):
        raise NotImplementedError(f"{type(self).__name__}: a Layer subclass must define call(self, inputs)")


__all__ = ["Input", "InputLayer", "Layer", *_POSITIONAL]
