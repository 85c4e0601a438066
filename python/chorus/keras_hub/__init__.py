"""`from chorus import keras_hub` (or keras_nlp, its former name): KerasHub's BERT masked
language model on chorus's, with its preprocessor."""
from chorus.keras_hub import layers, models

__all__ = ["layers", "models"]
