"""keras.distribution from Python: data parallelism gives the numbers of one device,
also for a model whose call() is Python (its replicas take the GIL in turn)."""
import unittest

import numpy as np

from chorus import jax, keras, tf


class TwoTower(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(16, activation="relu")
        self.out = keras.layers.Dense(1)

    def call(self, inputs, training=False):
        return self.out(self.hidden(inputs))


def functional():
    inputs = keras.Input(shape=(8,))
    hidden = keras.layers.Dense(16, activation="relu", name="hidden")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(hidden))


class DataParallelTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(2)
        self.x = rng.standard_normal((64, 8)).astype(np.float32)
        self.y = rng.standard_normal((64, 1)).astype(np.float32)

    def tearDown(self):
        keras.distribution.set_distribution(None)

    def train(self, make_model, distribution):
        keras.distribution.set_distribution(distribution)
        keras.utils.set_random_seed(3)
        model = make_model()
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")
        history = model.fit(self.x, self.y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        return history.history["loss"], model.get_weights()

    def check_same_as_one_device(self, make_model, distribution=None):
        devices = jax.devices()
        self.assertGreaterEqual(len(devices), 2)
        one_loss, one_weights = self.train(make_model, None)
        if distribution is None:
            mesh = keras.distribution.DeviceMesh(shape=(2,), axis_names=["data"], devices=devices[:2])
            distribution = keras.distribution.DataParallel(device_mesh=mesh)
        two_loss, two_weights = self.train(make_model, distribution)
        np.testing.assert_allclose(two_loss, one_loss, rtol=1e-6)
        for a, b in zip(two_weights, one_weights, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)

    def test_functional_model_on_two_devices_equals_one(self):
        self.check_same_as_one_device(functional)

    def test_python_call_on_two_devices_equals_one(self):
        self.check_same_as_one_device(TwoTower)

    def test_model_parallel_over_a_2x1_mesh_equals_one_device(self):
        # Keras's ModelParallel guide: kernels split over a "model" axis by a LayoutMap.
        devices = jax.devices()[:2]
        mesh = keras.distribution.DeviceMesh(shape=(1, 2), axis_names=["batch", "model"], devices=devices)
        layout_map = keras.distribution.LayoutMap(mesh)
        layout_map["hidden/kernel"] = (None, "model")
        layout_map["hidden/bias"] = ("model",)
        self.assertEqual(layout_map["hidden/kernel"], (None, "model"))
        self.assertIsNone(layout_map["dense/kernel"])
        model_parallel = keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch")
        self.check_same_as_one_device(functional, model_parallel)
        unmatched = keras.distribution.LayoutMap(mesh)
        unmatched["decoder/kernel"] = (None, "model")
        with self.assertRaisesRegex(ValueError, "decoder/kernel"):
            self.train(functional, keras.distribution.ModelParallel(layout_map=unmatched, batch_dim_name="batch"))

    def test_mirrored_strategy_scope_compiles_data_parallel_models(self):
        strategy = tf.distribute.MirroredStrategy()
        self.assertEqual(strategy.num_replicas_in_sync, len(jax.devices()))
        self.assertIsNone(keras.distribution.distribution())
        with strategy.scope():
            self.assertIsInstance(keras.distribution.distribution(), keras.distribution.DataParallel)
            one_loss, one_weights = self.train(functional, keras.distribution.distribution())
        self.assertIsNone(keras.distribution.distribution())
        with self.assertRaisesRegex(NotImplementedError, "its CPU devices, not '/tpu:0'"):
            tf.distribute.MirroredStrategy(["/tpu:0"])
        self.assertEqual(tf.distribute.MirroredStrategy(["/cpu:1"]).num_replicas_in_sync, 1)

    def test_bad_meshes_are_value_errors(self):
        with self.assertRaisesRegex(ValueError, "pass devices or device_mesh, not both"):
            keras.distribution.DataParallel(devices=jax.devices(), device_mesh=keras.distribution.DeviceMesh(
                shape=(1,), axis_names=["data"], devices=jax.devices()[:1]))
        with self.assertRaises(ValueError):
            keras.distribution.DeviceMesh(shape=(3,), axis_names=["data"], devices=jax.devices()[:2])


if __name__ == "__main__":
    unittest.main()
