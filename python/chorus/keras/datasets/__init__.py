"""keras.datasets: the published data sets Keras's tutorials load, read by chorus's verified
readers (chorus/data/)."""
from chorus.keras.datasets import mnist

__all__ = ["mnist"]
