"""Model, Sequential and Layer subclasses: training against NumPy's own arithmetic."""
import os
import tempfile
import unittest

import numpy as np

from chorus import data as chorus_data
from chorus import keras


def numpy_sgd(x, y, kernel, bias, learning_rate, batch_size, epochs, weights=None):
    """Dense(1) + mean squared error (weighted per example, summed over the batch size, as
    Keras's sum_over_batch_size reduction) + plain SGD, in float64: the reference."""
    kernel, bias = kernel.astype(np.float64), bias.astype(np.float64)
    weights = np.ones((len(x), 1)) if weights is None else weights.reshape(-1, 1)
    losses = []
    for _ in range(epochs):
        total = 0.0
        for start in range(0, len(x), batch_size):
            xb, yb, wb = x[start:start + batch_size], y[start:start + batch_size], weights[start:start + batch_size]
            error = xb @ kernel + bias - yb
            total += float((wb * error ** 2).mean()) * len(xb)
            kernel -= learning_rate * 2 * xb.T @ (wb * error) / error.size
            bias -= learning_rate * 2 * (wb * error).sum(0) / error.size
        losses.append(total / len(x))
    return kernel, bias, losses


class Linear(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)

    def call(self, inputs, training=False):
        self.seen_training = training
        return self.dense(inputs)


class ModelTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(3)
        self.x = rng.standard_normal((12, 3)).astype(np.float32)
        self.y = (self.x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)

    def check_against_numpy(self, model):
        kernel, bias = model.get_weights()
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
        history = model.fit(self.x, self.y, batch_size=4, epochs=3, shuffle=False, verbose=0)
        want_kernel, want_bias, want_losses = numpy_sgd(self.x, self.y, kernel, bias, 0.1, 4, 3)
        got_kernel, got_bias = model.get_weights()
        np.testing.assert_allclose(got_kernel, want_kernel, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_bias, want_bias, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(history.history["loss"], want_losses, rtol=1e-5)
        self.assertEqual(history.epoch, [0, 1, 2])

    def test_functional_model_trains_as_numpy_sgd(self):
        inputs = keras.Input(shape=(3,))
        self.check_against_numpy(keras.Model(inputs, keras.layers.Dense(1)(inputs)))

    def test_sequential_model_trains_as_numpy_sgd(self):
        self.check_against_numpy(keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)]))

    def test_subclassed_model_tracks_its_layers_and_trains_as_numpy_sgd(self):
        model = Linear()
        model(self.x[:1])  # builds
        self.assertEqual([w.path for w in model.trainable_weights], [f"{model.dense.name}/kernel",
                                                                      f"{model.dense.name}/bias"])
        self.check_against_numpy(model)
        self.assertTrue(model.seen_training)
        model.predict(self.x, verbose=0)
        self.assertFalse(model.seen_training)

    def test_sample_weights_with_arrays_train_as_numpy_weighted_sgd(self):
        inputs = keras.Input(shape=(3,))
        model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
        kernel, bias = model.get_weights()
        weights = np.linspace(0.0, 2.0, 16).astype(np.float32)
        x, y = np.concatenate([self.x, self.x[:4]]), np.concatenate([self.y, self.y[:4]])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
        # The last quarter of the rows (and their weights) validates, as Keras splits.
        history = model.fit(x, y, sample_weight=weights, batch_size=4, epochs=2, shuffle=False,
                            validation_split=0.25, verbose=0)
        want_kernel, want_bias, want_losses = numpy_sgd(x[:12], y[:12], kernel, bias, 0.1, 4, 2, weights[:12])
        np.testing.assert_allclose(model.get_weights()[0], want_kernel, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(history.history["loss"], want_losses, rtol=1e-5)
        error = x[12:] @ model.get_weights()[0] + model.get_weights()[1] - y[12:]
        want_val = float((weights[12:, None] * error ** 2).mean())
        self.assertAlmostEqual(history.history["val_loss"][-1], want_val, places=5)
        self.assertAlmostEqual(model.evaluate(x[12:], y[12:], sample_weight=weights[12:], verbose=0), want_val, places=5)

    def test_class_weights_weigh_the_training_rows_by_their_class(self):
        # Keras's rule: a row weighs class_weight[round(label)], 1 for a class not listed,
        # in training only: the validation split's rows stay unweighted.
        labels = np.array([[1], [0], [1], [0], [0], [1], [1], [0], [0], [0], [1], [1]], np.float32)
        x, y = np.concatenate([self.x, self.x[:4]]), np.concatenate([labels, labels[:4]])
        inputs = keras.Input(shape=(3,))
        model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
        kernel, bias = model.get_weights()
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
        history = model.fit(x, y, class_weight={1: 3.0, 7: 0.5}, batch_size=4, epochs=2, shuffle=False,
                            validation_split=0.25, verbose=0)
        weights = np.where(y[:, 0] == 1, 3.0, 1.0)
        want_kernel, want_bias, want_losses = numpy_sgd(x[:12], y[:12], kernel, bias, 0.1, 4, 2, weights[:12])
        np.testing.assert_allclose(model.get_weights()[0], want_kernel, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(history.history["loss"], want_losses, rtol=1e-5)
        error = x[12:] @ model.get_weights()[0] + model.get_weights()[1] - y[12:]
        self.assertAlmostEqual(history.history["val_loss"][-1], float((error ** 2).mean()), places=5)
        with self.assertRaisesRegex(ValueError, "cannot use `class_weight` and `sample_weight` at the same time"):
            model.fit(x, y, sample_weight=weights, class_weight={0: 1.0}, verbose=0)
        with self.assertRaisesRegex(TypeError, "class_weight maps class indices"):
            model.fit(x, y, class_weight={"1": 2.0}, verbose=0)

    def test_class_weights_of_one_hot_labels_in_a_dataset_are_their_argmax_classes(self):
        classes = np.array([0, 1, 2, 2, 1, 0, 0, 2, 1, 1, 2, 0])
        one_hot, weights = np.eye(3, dtype=np.float32)[classes], np.array([0.5, 1.0, 2.0], np.float32)[classes]
        inputs = keras.Input(shape=(3,))
        by_class = keras.Model(inputs, keras.layers.Dense(3)(inputs))
        inputs = keras.Input(shape=(3,))
        by_sample = keras.Model(inputs, keras.layers.Dense(3)(inputs))
        by_sample.set_weights(by_class.get_weights())
        histories = []
        for model, data in ((by_class, (self.x, one_hot)), (by_sample, (self.x, one_hot, weights))):
            model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                          loss=keras.losses.CategoricalCrossentropy(from_logits=True))
            dataset = chorus_data.Dataset.from_tensor_slices(data).batch(4)
            class_weight = {0: 0.5, 2: 2.0} if model is by_class else None
            histories.append(model.fit(dataset, class_weight=class_weight, epochs=2, verbose=0).history["loss"])
        self.assertEqual(histories[0], histories[1])
        for got, want in zip(by_class.get_weights(), by_sample.get_weights()):
            np.testing.assert_array_equal(got, want)
        weighted = chorus_data.Dataset.from_tensor_slices((self.x, one_hot, weights)).batch(4)
        with self.assertRaisesRegex(ValueError, "cannot use `class_weight` and `sample_weight` at the same time"):
            by_class.fit(weighted, class_weight={0: 2.0}, verbose=0)

    def test_evaluate_and_predict_agree_with_numpy(self):
        inputs = keras.Input(shape=(3,))
        model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
        model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
        kernel, bias = model.get_weights()
        want = self.x @ kernel + bias
        np.testing.assert_allclose(model.predict(self.x, batch_size=5, verbose=0), want, rtol=1e-5, atol=1e-6)
        loss, mae = model.evaluate(self.x, self.y, batch_size=5, verbose=0)
        self.assertAlmostEqual(loss, float(((want - self.y) ** 2).mean()), places=5)
        self.assertAlmostEqual(mae, float(np.abs(want - self.y).mean()), places=5)
        self.assertEqual(set(model.evaluate(self.x, self.y, verbose=0, return_dict=True)), {"loss", "mae"})

    def test_python_layer_with_its_own_weight_trains_as_numpy(self):
        class Scale(keras.layers.Layer):
            def build(self, input_shape):
                self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

            def call(self, x):
                return x * self.w

        inputs = keras.Input(shape=(3,))
        scale = Scale()
        model = keras.Model(inputs, scale(inputs))
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05), loss="mse")
        model.fit(self.x, self.x * 2, batch_size=12, epochs=1, verbose=0)
        # d/dw mean((x w - 2x)^2) at w = 1: 2 * mean over all elements of (x w - 2x) x, per column / 3 columns
        error = self.x - 2 * self.x
        want = 1 - 0.05 * 2 * (error * self.x).sum(0) / error.size
        np.testing.assert_allclose(np.asarray(scale.w), want, rtol=1e-5)
        self.assertEqual(scale.w.path, f"{scale.name}/w")

    def test_initializers_and_mixed_precision_reach_the_layers(self):
        dense = keras.layers.Dense(3, kernel_initializer=keras.initializers.Constant(0.5),
                                   bias_initializer=keras.initializers.RandomUniform(minval=1.0, maxval=2.0, seed=4))
        out = np.asarray(dense(np.ones((2, 4), np.float32)))
        bias = np.asarray(dense.bias)
        self.assertTrue(np.all((bias >= 1.0) & (bias < 2.0)))
        np.testing.assert_allclose(out, np.tile(2.0 + bias, (2, 1)), rtol=1e-6)
        self.assertEqual(dense.get_config()["kernel_initializer"], {"class_name": "Constant", "config": {"value": 0.5}})
        self.assertEqual(keras.layers.Dense(2, activation=keras.activations.gelu).get_config()["activation"], "gelu")
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
        try:
            mixed = keras.layers.Dense(3)
            self.assertEqual(mixed(np.ones((2, 4), np.float32)).dtype, "bfloat16")
            self.assertEqual(mixed.kernel.dtype, "float32")
        finally:
            keras.mixed_precision.set_global_policy("float32")

    def test_save_and_load_model_round_trip(self):
        inputs = keras.Input(shape=(3,))
        model = keras.Model(inputs, keras.layers.Dense(2, activation="relu")(inputs))
        model.compile(optimizer="adam", loss="mse")
        model.fit(self.x, np.zeros((12, 2), np.float32), epochs=1, verbose=0)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model")
            model.save(path)
            loaded = keras.saving.load_model(path)
            printed = []
            loaded.summary(print_fn=printed.append)  # a loaded model is chorus's own class
            self.assertIn("dense", printed[0])
            np.testing.assert_array_equal(loaded.predict(self.x, verbose=0), model.predict(self.x, verbose=0))
            self.assertEqual(loaded.optimizer.iterations, model.optimizer.iterations)
            model.save_weights(os.path.join(tmp, "w.safetensors"))
            loaded.set_weights([np.zeros_like(w) for w in loaded.get_weights()])
            loaded.load_weights(os.path.join(tmp, "w.safetensors"))
            np.testing.assert_array_equal(loaded.predict(self.x, verbose=0), model.predict(self.x, verbose=0))

    def test_chorus_models_and_layers_are_keras_instances(self):
        sequential = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(2)])
        self.assertIsInstance(sequential, keras.Model)
        self.assertIsInstance(keras.layers.Dense(2), keras.layers.Layer)
        self.assertIsInstance(sequential, keras.layers.Layer)
        self.assertTrue(issubclass(keras.Sequential, keras.Model))
        self.assertNotIsInstance(sequential, Linear)  # a subclass keeps its own instances
        self.assertIsInstance(Linear(), keras.Model)
        self.assertNotIsInstance(keras.layers.Dense(2), keras.Model)

    def test_clear_session_restarts_layer_names(self):
        keras.layers.Dense(1)
        keras.utils.clear_session()
        self.assertEqual(keras.layers.Dense(1).name, "dense")

    def test_summary_prints_the_layers(self):
        model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(4, name="hidden")], name="seq")
        lines = []
        model.summary(print_fn=lines.append)
        self.assertIn('Model: "seq"', lines[0])
        self.assertIn("hidden (Dense)", lines[0])

    def test_mistakes_raise_keras_errors(self):
        inputs = keras.Input(shape=(3,))
        model = keras.Model(inputs, keras.layers.Dense(1)(inputs), name="m")
        with self.assertRaisesRegex(ValueError, "compile"):
            model.fit(self.x, self.y, verbose=0)
        with self.assertRaisesRegex(ValueError, "unexpected config key 'bogus'"):
            keras.layers.Dense(4, bogus=1)
        with self.assertRaisesRegex(TypeError, r"takes 3 positional argument\(s\)"):
            keras.layers.Dense(4, "relu", True, 5)
        model.compile(optimizer="sgd", loss="mse")
        with self.assertRaises(ValueError):
            model.fit(np.ones((4, 5), np.float32), np.ones((4, 1), np.float32), verbose=0)
        with self.assertRaisesRegex(NotImplementedError, "loss_weights"):
            model.compile(optimizer="sgd", loss="mse", loss_weights=[1.0])


if __name__ == "__main__":
    unittest.main()
