"""keras.initializers: objects that layers' kernel_initializer/bias_initializer take. Each
is its Keras config, which chorus's C++ initializer of the same class rebuilds."""
from chorus._factories import Serialized, factory


class Initializer(Serialized):
    """An initializer as Keras serialises it: its class name and arguments."""


_POSITIONAL = {
    "Zeros": (),
    "Ones": (),
    "Constant": ("value",),
    "RandomNormal": ("mean", "stddev", "seed"),
    "RandomUniform": ("minval", "maxval", "seed"),
    "TruncatedNormal": ("mean", "stddev", "seed"),
    "VarianceScaling": ("scale", "mode", "distribution", "seed"),
    "GlorotNormal": ("seed",),
    "GlorotUniform": ("seed",),
    "HeNormal": ("seed",),
    "HeUniform": ("seed",),
    "LecunNormal": ("seed",),
    "LecunUniform": ("seed",),
}

for _name, _positional in _POSITIONAL.items():
    globals()[_name] = factory(_name, _positional, Initializer, __name__)

__all__ = ["Initializer", *_POSITIONAL]
