"""Multi-worker training from Python: `chorus launch -n 2 python3 train.py` with
tf.distribute.MultiWorkerMirroredStrategy trains, over Gloo between the two processes,
to the weights one process gets with the same replicas (DataParallel over 2 devices)."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

from chorus import keras

WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    from chorus import keras, tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = rng.standard_normal((64, 1)).astype(np.float32)
    keras.utils.set_random_seed(3)
    with strategy.scope():
        inputs = keras.Input(shape=(8,))
        model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Dense(16, activation="relu")(inputs)))
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    task = strategy.cluster_resolver.task_id
    np.savez(f"{sys.argv[1]}/worker-{task}.npz", replicas=strategy.num_replicas_in_sync,
             loss=history.history["loss"], *model.get_weights())
""")


class MultiWorkerTest(unittest.TestCase):
    def test_two_launched_python_workers_train_as_one_process_with_two_replicas(self):
        with tempfile.TemporaryDirectory() as out:
            script = os.path.join(out, "train.py")
            with open(script, "w") as f:
                f.write(WORKER)
            env = dict(os.environ, CHORUS_CPU_DEVICES="1")  # one device per worker: 2 replicas in all
            run = subprocess.run([os.environ["CHORUS_CLI"], "launch", "-n", "2", "--", sys.executable, script, out],
                                 env=env, capture_output=True, text=True, timeout=240)
            self.assertEqual(run.returncode, 0, run.stdout[-2000:] + run.stderr[-2000:])
            workers = [np.load(os.path.join(out, f"worker-{task}.npz")) for task in (0, 1)]

        self.assertEqual([int(w["replicas"]) for w in workers], [2, 2])
        weights = [[w[f"arr_{i}"] for i in range(4)] for w in workers]
        for a, b in zip(*weights):
            np.testing.assert_array_equal(a, b)  # the workers hold the same model

        rng = np.random.default_rng(0)
        x = rng.standard_normal((64, 8)).astype(np.float32)
        y = rng.standard_normal((64, 1)).astype(np.float32)
        keras.utils.set_random_seed(3)
        devices = keras.distribution.list_devices()[:2]
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        try:
            inputs = keras.Input(shape=(8,))
            model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Dense(16, activation="relu")(inputs)))
            model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")
            history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        finally:
            keras.distribution.set_distribution(None)
        np.testing.assert_allclose(workers[0]["loss"], history.history["loss"], rtol=1e-6)
        for got, want in zip(weights[0], model.get_weights(), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


if __name__ == "__main__":
    unittest.main()
