"""Callbacks written in Python, the built-ins, and Ctrl-C during fit."""
import os
import signal
import tempfile
import threading
import time
import unittest

import numpy as np

from chorus import keras


def small_model():
    inputs = keras.Input(shape=(4,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse")
    return model


class CallbackTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(5)
        self.x = rng.standard_normal((64, 4)).astype(np.float32)
        self.y = self.x.sum(1, keepdims=True).astype(np.float32)

    def test_a_python_callback_sees_every_hook_with_the_logs(self):
        events = []

        class Recorder(keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                events.append(("train_begin", self.model.name))

            def on_epoch_end(self, epoch, logs=None):
                events.append(("epoch_end", epoch, logs["loss"]))

            def on_train_batch_end(self, batch, logs=None):
                events.append(("batch_end", batch))

        model = small_model()
        history = model.fit(self.x, self.y, batch_size=16, epochs=2, verbose=0, callbacks=[Recorder()])
        self.assertEqual(events[0], ("train_begin", model.name))
        self.assertEqual([e[1] for e in events if e[0] == "batch_end"], [0, 1, 2, 3] * 2)
        self.assertEqual([e[2] for e in events if e[0] == "epoch_end"], history.history["loss"])

    def test_an_exception_in_a_callback_reaches_the_caller(self):
        class Failing(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                raise RuntimeError(f"stop at {epoch}")

        with self.assertRaisesRegex(RuntimeError, "stop at 0"):
            small_model().fit(self.x, self.y, epochs=3, verbose=0, callbacks=[Failing()])

    def test_lambda_callback_and_stop_training(self):
        ends = []
        model = small_model()

        def on_epoch_end(epoch, logs):
            ends.append(epoch)
            model.stop_training = epoch == 1

        model.fit(self.x, self.y, epochs=5, verbose=0,
                  callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=on_epoch_end)])
        self.assertEqual(ends, [0, 1])
        with self.assertRaisesRegex(TypeError, "on_epoch_ending"):
            keras.callbacks.LambdaCallback(on_epoch_ending=print)

    def test_learning_rate_scheduler_calls_python(self):
        model = small_model()
        model.fit(self.x, self.y, epochs=3, verbose=0,
                  callbacks=[keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.5 ** epoch)])
        self.assertAlmostEqual(model.optimizer.learning_rate, 0.25)  # a tensor, as Keras's variable

    def test_early_stopping_takes_keras_arguments(self):
        with self.assertRaisesRegex(ValueError, "mode: expected 'auto', 'min' or 'max'"):
            keras.callbacks.EarlyStopping(mode="lowest")
        model = small_model()
        history = model.fit(self.x, self.y, epochs=20, verbose=0, validation_split=0.25,
                            callbacks=[keras.callbacks.EarlyStopping(monitor="loss", min_delta=1e9, patience=1)])
        self.assertEqual(len(history.epoch), 2)

    def test_ctrl_c_stops_after_a_step_and_keeps_the_backup(self):
        # No Python callback runs in this fit (one would see the signal itself): only the
        # check after each step can turn it into KeyboardInterrupt before fit ends.
        x = np.tile(self.x, (50, 1))
        y = np.tile(self.y, (50, 1))
        model = small_model()
        with tempfile.TemporaryDirectory() as backup:
            def interrupt_after_the_first_backup():
                while not any(name.startswith("backup-") for name in os.listdir(backup)):
                    time.sleep(0.001)
                os.kill(os.getpid(), signal.SIGINT)

            thread = threading.Thread(target=interrupt_after_the_first_backup)
            thread.start()
            with self.assertRaises(KeyboardInterrupt):
                model.fit(x, y, batch_size=1, epochs=30, verbose=0,
                          callbacks=[keras.callbacks.BackupAndRestore(backup, save_freq=100)])
            thread.join()
            self.assertLess(model.optimizer.iterations, 30 * len(x))
            self.assertTrue(any(name.startswith("backup-") for name in os.listdir(backup)), os.listdir(backup))


if __name__ == "__main__":
    unittest.main()
