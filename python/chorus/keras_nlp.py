"""`from chorus import keras_nlp`: KerasHub under its former name."""
from chorus.keras_hub import layers, models

__all__ = ["layers", "models"]
