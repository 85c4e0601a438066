"""keras.utils.set_random_seed: chorus's initializers and Dropout, Python's and NumPy's."""
import random

from chorus import _chorus


def set_random_seed(seed):
    """Seeds chorus's process-wide stream (weights, Dropout), and Python's and NumPy's, as Keras does."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    _chorus.set_random_seed(seed)


__all__ = ["set_random_seed"]
