"""keras_hub.models: BertMaskedLM.from_preset("bert_tiny_en_uncased")."""
import os

from chorus import _chorus


class BertMaskedLM:
    """keras_hub.models.BertMaskedLM: made by from_preset; fit and evaluate take datasets
    of raw strings, which its preprocessor tokenizes and masks."""

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError("keras_hub.models.BertMaskedLM: make one with BertMaskedLM.from_preset(...)")

    @staticmethod
    def from_preset(preset, vocabulary=None):
        """A preset's architecture (random weights: chorus downloads none), a folder saved by
        save(), or a Hugging Face BERT folder. The WordPiece vocabulary comes from
        `vocabulary`, the folder, $CHORUS_SHARED_DATA/bert/vocab.txt, or chorus's data home."""
        if vocabulary is None and not os.path.isdir(preset):
            shared = os.path.join(os.environ.get("CHORUS_SHARED_DATA", ""), "bert", "vocab.txt")
            vocabulary = shared if os.path.isfile(shared) else None
        return _chorus.BertMaskedLM.from_preset(preset, vocabulary)


__all__ = ["BertMaskedLM"]
