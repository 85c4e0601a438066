"""chorus.keras: Keras 3's API (`from chorus import keras`) on chorus's engine."""
from chorus.keras import (activations, callbacks, datasets, distribution, initializers, layers, losses, metrics,
                          mixed_precision, models, ops, optimizers, saving, utils)
from chorus.keras.layers import Input
from chorus.keras.models import Model, Sequential

__all__ = ["Input", "Model", "Sequential", "activations", "callbacks", "datasets", "distribution", "initializers",
           "layers", "losses", "metrics", "mixed_precision", "models", "ops", "optimizers", "saving", "utils"]
