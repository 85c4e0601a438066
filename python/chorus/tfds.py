"""`from chorus import tfds`: tensorflow_datasets.load for the tutorials' data sets, read by
chorus's verified readers. MovieLens 100K comes from $CHORUS_SHARED_DATA/ml-100k when that
exists, else from chorus's data cache (downloaded and checked by SHA-256 on first use).

    ratings = tfds.load("movielens/100k-ratings", split="train")

Strings are bytes, as tfds yields them. Elements come in the files' order (tfds's own
order is that of its shuffled TFRecord shards). Fields: movielens/100k-ratings has
movie_id, movie_title, timestamp, user_id and user_rating; movielens/100k-movies has
movie_id and movie_title. tfds's user and genre fields are not provided.
"""

import numpy as _np

from chorus import _chorus
from chorus import _data_files
from chorus._shim import module_getattr as _module_getattr
from chorus.data import Dataset as _Dataset


def _movielens_dir():
    return _data_files.directory("movielens-100k", "ml-100k", "u.data")


def _as_bytes(ids):
    return _np.char.encode(_np.asarray(ids).astype(str), "ascii").astype(object)


def _movielens_ratings(directory):
    columns = _chorus.datasets.movielens_100k_ratings(directory)
    movies = _chorus.datasets.movielens_100k_movies(directory)
    titles = dict(zip(movies["movie_id"].tolist(), (t.encode() for t in movies["movie_title"])))
    return {
        "movie_id": _as_bytes(columns["movie_id"]),
        "movie_title": _np.array([titles[i] for i in columns["movie_id"].tolist()], dtype=object),
        "timestamp": columns["timestamp"],
        "user_id": _as_bytes(columns["user_id"]),
        "user_rating": columns["user_rating"],
    }


def _movielens_movies(directory):
    movies = _chorus.datasets.movielens_100k_movies(directory)
    return {
        "movie_id": _as_bytes(movies["movie_id"]),
        "movie_title": _np.array([t.encode() for t in movies["movie_title"]], dtype=object),
    }


_DATASETS = {"movielens/100k-ratings": _movielens_ratings, "movielens/100k-movies": _movielens_movies}


def load(name, split=None, **kwargs):
    """tfds.load(name, split="train"): the whole data set as one split."""
    if name not in _DATASETS:
        raise NotImplementedError(f"tfds.load: chorus reads {sorted(_DATASETS)}, not '{name}'")
    if split not in (None, "train"):
        raise NotImplementedError(f"tfds.load('{name}'): the data set has one split, 'train', not '{split}'")
    if kwargs:
        raise NotImplementedError(f"tfds.load: arguments {sorted(kwargs)} are not supported")
    return _Dataset.from_tensor_slices(_DATASETS[name](_movielens_dir()))


__getattr__ = _module_getattr("tfds", globals())
