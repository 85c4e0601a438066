"""keras.activations: functions on tensors, which layers also take by these names
(`Dense(64, activation=keras.activations.relu)` is `activation="relu"`)."""
from chorus import _chorus

relu = _chorus.ops.relu
gelu = _chorus.ops.gelu
sigmoid = _chorus.ops.sigmoid
tanh = _chorus.ops.tanh
softmax = _chorus.ops.softmax
softplus = _chorus.ops.softplus


def linear(x):
    """The identity (Keras's default activation)."""
    return x


__all__ = ["gelu", "linear", "relu", "sigmoid", "softmax", "softplus", "tanh"]
