"""chorus.data.Dataset from Python: elements, Python map/filter functions, and fit."""
import subprocess
import sys
import unittest

import numpy as np

from chorus import data, keras


def linear_model(optimizer):
    """Dense(1) on 3 features with the same initial weights every time."""
    keras.utils.set_random_seed(11)
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer=optimizer, loss="mse")
    return model


class DatasetTest(unittest.TestCase):
    def test_elements_come_back_as_tuples_and_dicts_of_arrays(self):
        x = np.arange(6, dtype=np.float32).reshape(3, 2)
        ds = data.Dataset.from_tensor_slices((x, {"label": np.array([0, 1, 2])}))
        elements = list(ds)
        self.assertEqual(len(elements), 3)
        features, labels = elements[1]
        np.testing.assert_array_equal(features, [2.0, 3.0])
        self.assertEqual(int(labels["label"]), 1)
        batches = list(ds.batch(2))
        self.assertEqual([b[0].shape for b in batches], [(2, 2), (1, 2)])

    def test_python_map_and_filter_run_per_element(self):
        # The speed warning, once per process: in a fresh one, as this one may have said it.
        run = subprocess.run([sys.executable, "-W", "always", "-c",
                              "from chorus import data; data.Dataset.range(3).map(lambda i: i); "
                              "data.Dataset.range(3).filter(lambda i: i > 0).map(abs)"],
                             capture_output=True, text=True, check=True)
        self.assertEqual(run.stderr.count("the Python function runs once per element, holding the GIL"), 1,
                         run.stderr)
        ds = data.Dataset.range(10).filter(lambda i: i >= 6).map(lambda i: (i * 2, i))
        self.assertEqual([(int(a), int(b)) for a, b in ds], [(12, 6), (14, 7), (16, 8), (18, 9)])

    def test_an_exception_in_map_names_its_cause(self):
        def bad(i):
            raise ValueError(f"bad element {int(i)}")

        with self.assertRaisesRegex(ValueError, "bad element 0"):
            list(data.Dataset.range(3).map(bad))

    def test_fit_on_a_dataset_equals_fit_on_arrays(self):
        rng = np.random.default_rng(1)
        x = rng.standard_normal((40, 3)).astype(np.float32)
        y = rng.standard_normal((40, 1)).astype(np.float32)

        a, b = linear_model("adam"), linear_model("adam")
        history_a = a.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        history_b = b.fit(data.Dataset.from_tensor_slices((x, y)).batch(8), epochs=2, verbose=0)
        self.assertEqual(history_a.history["loss"], history_b.history["loss"])
        for wa, wb in zip(a.get_weights(), b.get_weights()):
            np.testing.assert_array_equal(wa, wb)
        val = b.fit(data.Dataset.from_tensor_slices((x, y)).batch(8), validation_data=(x, y), verbose=0)
        self.assertIn("val_loss", val.history)

    def test_fit_on_python_generators_equals_fit_on_arrays(self):
        rng = np.random.default_rng(4)
        x = rng.standard_normal((32, 3)).astype(np.float32)
        y = rng.standard_normal((32, 1)).astype(np.float32)

        def batches():  # endless, as Keras's generator inputs usually are
            while True:
                for start in range(0, 32, 8):
                    yield x[start:start + 8], y[start:start + 8]

        a, b, c = linear_model("sgd"), linear_model("sgd"), linear_model("sgd")
        want = a.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
        self.assertEqual(b.fit(batches(), steps_per_epoch=4, epochs=3, verbose=0).history["loss"], want)
        from_generator = data.Dataset.from_generator(lambda: ((x[i:i + 8], y[i:i + 8]) for i in range(0, 32, 8)))
        self.assertEqual(c.fit(from_generator, epochs=3, verbose=0).history["loss"], want)
        self.assertAlmostEqual(a.evaluate(batches(), steps=4, verbose=0), a.evaluate(x, y, verbose=0), places=6)
        with self.assertRaisesRegex(ValueError, "sample_weight goes with arrays"):
            a.fit(batches(), steps_per_epoch=4, sample_weight=np.ones(32), verbose=0)


if __name__ == "__main__":
    unittest.main()
