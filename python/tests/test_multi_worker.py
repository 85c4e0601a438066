"""Multi-worker training from Python: `chorus launch -n 2 python3 train.py` with
tf.distribute.MultiWorkerMirroredStrategy trains, over Gloo between the two processes,
to the weights one process gets with the same replicas (DataParallel over 2 devices),
and BackupAndRestore resumes a crashed job to the uninterrupted job's weights."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

from chorus import keras

WORKER = textwrap.dedent("""
    import os
    import sys
    import numpy as np
    from chorus import keras, tf

    out = sys.argv[1]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    task = strategy.cluster_resolver.task_id
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = rng.standard_normal((64, 1)).astype(np.float32)
    keras.utils.set_random_seed(3)
    with strategy.scope():
        inputs = keras.Input(shape=(8,))
        model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Dense(16, activation="relu")(inputs)))
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")


    class CrashOnce(keras.callbacks.Callback):
        # Worker 1 dies after epoch 2's backup, on the first attempt only.
        def on_epoch_end(self, epoch, logs=None):
            marker = os.path.join(out, "crashed")
            if epoch == 1 and task == 1 and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)


    class EpochLog(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            with open(os.path.join(out, f"epochs-{task}.txt"), "a") as f:
                f.write(f"{epoch}\\n")


    callbacks = [keras.callbacks.BackupAndRestore(os.path.join(out, "backup")), EpochLog()]
    if "--crash" in sys.argv:
        callbacks.append(CrashOnce())
    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0, callbacks=callbacks)
    np.savez(f"{out}/worker-{task}.npz", replicas=strategy.num_replicas_in_sync,
             loss=history.history["loss"], *model.get_weights())
""")


def launch(out, *worker_args, max_restarts=0):
    """Two workers of WORKER under `chorus launch`, one device each; their saved results."""
    script = os.path.join(out, "train.py")
    with open(script, "w") as f:
        f.write(WORKER)
    env = dict(os.environ, CHORUS_CPU_DEVICES="1")  # 2 replicas in all
    run = subprocess.run([os.environ["CHORUS_CLI"], "launch", "-n", "2", "--max-restarts", str(max_restarts), "--",
                          sys.executable, script, out, *worker_args],
                         env=env, capture_output=True, text=True, timeout=240)
    if run.returncode != 0:
        raise AssertionError(run.stdout[-2000:] + run.stderr[-2000:])
    return [np.load(os.path.join(out, f"worker-{task}.npz")) for task in (0, 1)], run


def weights_of(worker):
    return [worker[f"arr_{i}"] for i in range(4)]


class MultiWorkerTest(unittest.TestCase):
    def test_two_launched_python_workers_train_as_one_process_with_two_replicas(self):
        with tempfile.TemporaryDirectory() as out:
            workers, _ = launch(out)
        self.assertEqual([int(w["replicas"]) for w in workers], [2, 2])
        weights = [weights_of(w) for w in workers]
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

    def test_a_worker_crash_resumes_from_the_backup_to_the_uninterrupted_weights(self):
        with tempfile.TemporaryDirectory() as uninterrupted, tempfile.TemporaryDirectory() as crashed:
            want, _ = launch(uninterrupted)
            got, run = launch(crashed, "--crash", max_restarts=1)
            self.assertTrue(os.path.exists(os.path.join(crashed, "crashed")))
            self.assertIn("restarting the workers (restart 1 of 1)", run.stdout + run.stderr)
            with open(os.path.join(crashed, "epochs-0.txt")) as f:
                self.assertEqual(f.read().split(), ["0", "1", "2"])  # the restart ran epoch 3 only
        for task in (0, 1):
            for a, b in zip(weights_of(got[task]), weights_of(want[task]), strict=True):
                np.testing.assert_array_equal(a, b)  # bit for bit, as a C++ program resumes


if __name__ == "__main__":
    unittest.main()
