"""`from chorus import keras_nlp`: KerasHub under its former name."""
from chorus.keras_hub import models

__all__ = ["models"]
