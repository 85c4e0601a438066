"""keras.utils: set_random_seed (chorus's initializers and Dropout, Python's and NumPy's)
and clear_session (layer names start again: the next Dense is "dense")."""
import random

from chorus import _chorus


def set_random_seed(seed):
    """Seeds chorus's process-wide stream (weights, Dropout), and Python's and NumPy's, as Keras does."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    _chorus.set_random_seed(seed)


def clear_session():
    """Keras's clear_session for names: the next layer of a class gets its first name again."""
    _chorus.reset_names()


__all__ = ["clear_session", "set_random_seed"]
