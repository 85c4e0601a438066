"""chorus: Keras's programming model on chorus's C++ engine, with no TensorFlow, JAX or
PyTorch underneath. A Keras program changes only its imports:

    from chorus import keras
"""
from chorus import _chorus
from chorus._chorus import Tensor, Variable
from chorus import data, keras

__version__ = "0.1.0"
__all__ = ["Tensor", "Variable", "data", "keras"]
