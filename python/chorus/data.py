"""chorus.data: tf.data's input pipeline on chorus's (`Dataset`, `AUTOTUNE`)."""
from chorus._chorus import Dataset

# tf.data.AUTOTUNE: chorus picks the parallelism itself.
AUTOTUNE = -1

__all__ = ["AUTOTUNE", "Dataset"]
