"""Keras's "customizing what happens in fit()": train_step and test_step written in Python
with tf.GradientTape, against Keras's own steps, one device and two."""
import unittest

import numpy as np

from chorus import jax, keras, tf


class CustomStepsModel(keras.Model):
    """The Keras guide's custom train_step and test_step, on a two-layer model."""

    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(16, activation="relu")
        self.out = keras.layers.Dense(1)
        self.steps_run = 0

    def call(self, inputs, training=False):
        return self.out(self.hidden(inputs))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        self.steps_run += 1
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {**{m.name: m.result() for m in self.metrics}, "extra": {"custom": 7.0}}  # flattened


class KerasSteps(CustomStepsModel):
    """The same model with Keras's own steps, reached from overrides as super() reaches them."""

    def train_step(self, data):
        return keras.Model.train_step(self, data)

    def test_step(self, data):
        return keras.Model.test_step(self, data)


class CustomStepsTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(5)
        self.x = rng.standard_normal((64, 8)).astype(np.float32)
        self.y = rng.standard_normal((64, 1)).astype(np.float32)

    def tearDown(self):
        keras.distribution.set_distribution(None)

    def train(self, model_class, distribution=None):
        keras.distribution.set_distribution(distribution)
        keras.utils.set_random_seed(4)
        model = model_class()
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05), loss="mse", metrics=["mae"])
        history = model.fit(self.x, self.y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        return model, history.history

    def test_a_python_train_step_trains_as_kerass_own(self):
        custom, custom_history = self.train(CustomStepsModel)
        own, own_history = self.train(KerasSteps)
        self.assertEqual(custom.steps_run, 12)  # 4 batches x 3 epochs
        self.assertEqual(own.steps_run, 0)
        np.testing.assert_allclose(custom_history["loss"], own_history["loss"], rtol=1e-6)
        np.testing.assert_allclose(custom_history["mae"], own_history["mae"], rtol=1e-6)
        for a, b in zip(custom.get_weights(), own.get_weights(), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        # evaluate runs the Python test_step, whose extra entry reaches the logs.
        logs = custom.evaluate(self.x, self.y, batch_size=16, verbose=0, return_dict=True)
        self.assertEqual(logs["custom"], 7.0)
        self.assertAlmostEqual(logs["loss"], own.evaluate(self.x, self.y, batch_size=16, verbose=0)[0], places=5)

    def test_a_python_train_step_on_two_replicas_equals_one_device(self):
        devices = jax.devices()
        self.assertGreaterEqual(len(devices), 2)
        _, one = self.train(CustomStepsModel)
        mesh = keras.distribution.DeviceMesh(shape=(2,), axis_names=["data"], devices=devices[:2])
        model, two = self.train(CustomStepsModel, keras.distribution.DataParallel(device_mesh=mesh))
        self.assertEqual(model.steps_run, 24)  # each replica ran each step
        np.testing.assert_allclose(two["loss"], one["loss"], rtol=1e-5)

    def test_gradient_tape(self):
        x = tf.constant([1.0, 2.0, 3.0])
        other = tf.constant([1.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = keras.ops.sum(x * x)
        np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), [2.0, 4.0, 6.0])
        grads = tape.gradient(y, [x, other])
        self.assertIsNone(grads[1])  # not connected: None, as in Keras
        with self.assertRaisesRegex(ValueError, "one `with` block"):
            with tape:
                pass
        with self.assertRaisesRegex(ValueError, "use the tape in a `with` block first"):
            tf.GradientTape().gradient(y, x)


if __name__ == "__main__":
    unittest.main()
