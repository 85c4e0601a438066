"""chorus.keras: Keras 3's API (`from chorus import keras`) on chorus's engine."""
from chorus.keras import (callbacks, distribution, initializers, layers, losses, metrics, mixed_precision, models,
                          ops, optimizers, saving, utils)
from chorus.keras.layers import Input
from chorus.keras.models import Model, Sequential

__all__ = ["Input", "Model", "Sequential", "callbacks", "distribution", "initializers", "layers", "losses", "metrics",
           "mixed_precision", "models", "ops", "optimizers", "saving", "utils"]
