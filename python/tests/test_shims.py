"""The tf, tfds, jax and keras_hub shims: what the tutorials use behaves as there, and
anything else is a NotImplementedError naming it."""
import os
import unittest

import numpy as np

from chorus import jax, keras_hub, keras_nlp, tf, tfds

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_DATA = os.environ.get("CHORUS_SHARED_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))


class ShimTest(unittest.TestCase):
    def test_other_names_are_not_implemented_naming_them(self):
        with self.assertRaisesRegex(NotImplementedError, r"tf\.function is not provided by chorus"):
            tf.function
        with self.assertRaisesRegex(NotImplementedError, r"tf\.data\.TFRecordDataset is not provided"):
            tf.data.TFRecordDataset
        with self.assertRaisesRegex(NotImplementedError, r"jax\.numpy is not provided"):
            jax.numpy
        with self.assertRaisesRegex(NotImplementedError, r"tfds\.builder is not provided"):
            tfds.builder
        with self.assertRaisesRegex(NotImplementedError, "chorus reads .*not 'mnist'"):
            tfds.load("mnist")

    def test_tf_ops_and_dtypes(self):
        self.assertEqual(tf.constant(0, tf.int32).dtype, "int32")
        numbers = tf.strings.to_number(np.array([b"12", b"7"], dtype=object), out_type=tf.int32)
        np.testing.assert_array_equal(np.asarray(tf.maximum(numbers, tf.constant(9, tf.int32))), [12, 9])
        np.testing.assert_array_equal(np.asarray(tf.strings.length(np.array([b"abc", b""], dtype=object))), [3, 0])
        with self.assertRaisesRegex(ValueError, "to_number"):
            tf.strings.to_number(np.array([b"x1"], dtype=object), out_type=tf.int32)

    def test_devices(self):
        self.assertEqual([d.id for d in jax.devices()], list(range(len(jax.devices()))))
        self.assertEqual(len(tf.config.list_logical_devices("CPU")), len(jax.devices()))
        with self.assertRaisesRegex(NotImplementedError, "not 'TPU'"):
            tf.config.list_logical_devices("TPU")

    def test_keras_hub_presets_and_layers(self):
        self.assertIs(keras_nlp.models.BertMaskedLM, keras_hub.models.BertMaskedLM)
        encoder = keras_nlp.layers.TransformerEncoder(16, 2)
        out = encoder(np.ones((2, 5, 8), np.float32))
        self.assertEqual((out.shape, encoder.get_config()["intermediate_dim"]), ((2, 5, 8), 16))
        with self.assertRaisesRegex(ValueError, "unknown BERT preset 'bert_huge'"):
            keras_hub.models.BertMaskedLM.from_preset("bert_huge", vocabulary=os.devnull)
        with self.assertRaisesRegex(NotImplementedError, "from_preset"):
            keras_hub.models.BertMaskedLM()

    @unittest.skipUnless(os.path.isfile(os.path.join(SHARED_DATA, "ml-100k", "u.data")), "no MovieLens 100K")
    def test_tfds_movielens_yields_bytes_as_tfds(self):
        os.environ["CHORUS_SHARED_DATA"] = SHARED_DATA
        ratings = tfds.load("movielens/100k-ratings", split="train")
        first = next(ratings.as_numpy_iterator())
        self.assertEqual(sorted(first), ["movie_id", "movie_title", "timestamp", "user_id", "user_rating"])
        # u.data's first line: 196	242	3	881250949; movie 242 is Kolya (1996).
        self.assertEqual((first["user_id"], first["movie_id"], first["movie_title"]), (b"196", b"242", b"Kolya (1996)"))
        self.assertEqual((float(first["user_rating"]), int(first["timestamp"])), (3.0, 881250949))
        self.assertEqual(int(ratings.cardinality().numpy()), 100_000)
        movies = tfds.load("movielens/100k-movies", split="train")
        self.assertEqual(int(movies.cardinality()), 1682)
        with self.assertRaisesRegex(NotImplementedError, "one split, 'train', not 'test'"):
            tfds.load("movielens/100k-ratings", split="test")


if __name__ == "__main__":
    unittest.main()
