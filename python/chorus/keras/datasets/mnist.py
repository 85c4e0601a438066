"""keras.datasets.mnist: MNIST's 60,000 training and 10,000 test digits as NumPy arrays."""
from chorus import _chorus
from chorus import _data_files


def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)): images (N, 28, 28) and labels (N,), both uint8
    as Keras's. `path` (Keras's cache file name) is accepted and unused: the IDX files come
    from $CHORUS_SHARED_DATA/mnist or chorus's data cache."""
    del path
    directory = _data_files.directory("mnist", "mnist", "train-labels-idx1-ubyte.gz")
    splits = []
    for train in (True, False):
        images, labels = _chorus.datasets.mnist_load_data(directory, train)
        splits.append((images, labels.astype("uint8")))
    return tuple(splits)
