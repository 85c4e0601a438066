"""The seed tutorials' own Python code, with only its imports changed, on chorus: the same
numbers as chorus's C++ port of the tutorial (`chorus train movielens-retrieval`)."""
import contextlib
import io
import os
import re
import runpy
import subprocess
import sys
import tempfile
import unittest

from chorus import keras

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
SHARED_DATA = os.environ.get("CHORUS_SHARED_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))


def epoch_logs(text):
    """The per-epoch logs Keras's verbose=2 progress lines print, as dicts."""
    return [dict((name, float(value)) for name, value in re.findall(r"(\w+): (\d+\.\d+)", line))
            for line in text.splitlines() if re.match(r"\s*\d+/\d+ ", line)]


@unittest.skipUnless(os.path.isfile(os.path.join(SHARED_DATA, "ml-100k", "u.data")),
                     "MovieLens 100K is not in CHORUS_SHARED_DATA")
class RetrievalTutorialTest(unittest.TestCase):
    def test_the_tutorial_as_printed_trains_as_the_cpp_port(self):
        os.environ["CHORUS_SHARED_DATA"] = SHARED_DATA
        keras.utils.set_random_seed(42)  # the C++ port's seed; the tutorial itself sets none
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            tutorial = runpy.run_path(os.path.join(EXAMPLES, "keras_rs_retrieval.py"), run_name="__main__")
        history = tutorial["history"].history
        self.assertEqual(len(history["loss"]), 50)
        self.assertEqual(len(history["val_loss"]), 10)  # validation_freq=5
        self.assertEqual(tutorial["predictions"].shape, (len(tutorial["devices"]), 10))
        self.assertEqual(out.getvalue().count("==Recommended movies for user"), len(tutorial["devices"]))
        self.assertIn("b'Star Wars (1977)'", out.getvalue())

        cli = subprocess.run([os.environ["CHORUS_CLI"], "train", "movielens-retrieval", "--data",
                              os.path.join(SHARED_DATA, "ml-100k"), "--devices", "0", "--verbose", "2"],
                             check=True, capture_output=True, text=True)
        cpp = epoch_logs(cli.stdout)
        self.assertEqual(len(cpp), 50)
        # Printed to 4 decimals; the loss curve is steep by epoch 50, so any difference in
        # data order, initial weights or updates would show far beyond that.
        for epoch, logs in enumerate(cpp):
            self.assertAlmostEqual(history["loss"][epoch], logs["loss"], delta=6e-5, msg=f"epoch {epoch + 1}")
        cpp_val = [logs["val_loss"] for logs in cpp if "val_loss" in logs]
        for got, want in zip(history["val_loss"], cpp_val, strict=True):
            self.assertAlmostEqual(got, want, delta=6e-5)


@unittest.skipUnless(os.path.isfile(os.path.join(SHARED_DATA, "wikitext-2", "wiki.train.tokens")) and
                     os.path.isfile(os.path.join(SHARED_DATA, "bert", "vocab.txt")),
                     "WikiText-2 or the BERT vocabulary is not in CHORUS_SHARED_DATA")
class BertTutorialTest(unittest.TestCase):
    def test_the_tutorial_as_printed_trains_evaluates_and_logs(self):
        with tempfile.TemporaryDirectory() as home:
            # The tutorial reads ~/.keras/datasets/wikitext-2/, where its download puts the
            # files: here the first lines of each split, so that its 3 epochs are 6 steps.
            wiki_dir = os.path.join(home, ".keras", "datasets", "wikitext-2")
            os.makedirs(wiki_dir)
            for split, lines in (("train", 250), ("valid", 120), ("test", 120)):
                with open(os.path.join(SHARED_DATA, "wikitext-2", f"wiki.{split}.tokens"), encoding="utf-8") as f:
                    head = [next(f) for _ in range(lines)]
                with open(os.path.join(wiki_dir, f"wiki.{split}.tokens"), "w", encoding="utf-8") as f:
                    f.writelines(head)
            env = dict(os.environ, HOME=home, CHORUS_SHARED_DATA=SHARED_DATA)
            run = subprocess.run([sys.executable, os.path.join(EXAMPLES, "keras_nlp_bert_mlm.py")], cwd=home, env=env,
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr[-3000:])
            self.assertIn("Number of devices: 2", run.stdout)
            self.assertIn("[PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')]", run.stdout)
            # The seed's own output line: AdamW's rate, 2e-4 as float32, printed by NumPy.
            for epoch in (1, 2, 3):
                self.assertIn(f"Learning rate for epoch {epoch} is 0.00019999999494757503", run.stdout)
            self.assertIn("chorus's logical CPU devices stand in for 'GPU'", run.stderr)
            epochs = epoch_logs(run.stdout)
            self.assertEqual(len(epochs), 4)  # 3 epochs, then evaluate
            self.assertEqual(set(epochs[0]), {"loss", "sparse_categorical_accuracy", "val_loss",
                                              "val_sparse_categorical_accuracy"})
            self.assertLess(epochs[2]["loss"], epochs[0]["loss"])
            for split in ("train", "validation"):
                self.assertTrue(any(name.startswith("events.out.tfevents")
                                    for name in os.listdir(os.path.join(home, "logs", split))), split)


if __name__ == "__main__":
    unittest.main()
