"""keras_hub.layers: KerasHub's layers on chorus's (one layer registry holds them with Keras's)."""
from chorus._factories import factory
from chorus.keras.layers import make_layer

_POSITIONAL = {
    "PositionEmbedding": ("sequence_length",),
    "ReversibleEmbedding": ("input_dim", "output_dim"),
    "TokenAndPositionEmbedding": ("vocabulary_size", "sequence_length", "embedding_dim"),
    "TransformerEncoder": ("intermediate_dim", "num_heads", "dropout"),
}

for _name, _positional in _POSITIONAL.items():
    globals()[_name] = factory(_name, _positional, make_layer, __name__)

__all__ = list(_POSITIONAL)
