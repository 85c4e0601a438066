"""`from chorus import keras_rs`: keras-rs's layers on chorus's recsys."""
from chorus.keras_rs import layers

__all__ = ["layers"]
