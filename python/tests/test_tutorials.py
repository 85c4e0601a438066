"""The seed tutorials' own Python code, with only its imports changed, on chorus: the seeds'
text line for line, and the same numbers as chorus's C++ ports (`chorus train ...`)."""
import contextlib
import difflib
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
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "python")
SHARED = os.path.join(HERE, "..", "..", "..", "shared")
SHARED_DATA = os.environ.get("CHORUS_SHARED_DATA", os.path.join(SHARED, "data"))
SEEDS = os.path.join(SHARED, "seeds")


def code_lines(text):
    """The lines of Python code in a text, whitespace removed; comment lines, blank lines and
    imports (the one thing a port changes) left out."""
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and not re.match(r"(import|from) ", line):
            lines.append(re.sub(r"\s+", "", line))
    return lines


def lines_not_in_seed(seed, example):
    """The example's code lines that a diff against the seed's text finds added or changed."""
    with open(os.path.join(SEEDS, seed), encoding="utf-8") as f:
        seed_lines = code_lines(f.read())
    with open(os.path.join(EXAMPLES, example), encoding="utf-8") as f:
        example_lines = code_lines(f.read())
    diff = difflib.SequenceMatcher(None, seed_lines, example_lines, autojunk=False)
    return [line for tag, _, _, j1, j2 in diff.get_opcodes() if tag in ("insert", "replace")
            for line in example_lines[j1:j2]]


# The lines the BERT seed's text lost (a web page's code blocks, cut to the arguments
# shown), filled in as chorus's C++ port reads them (tools/chorus/recipes/bert_mlm_tutorial.cc).
BERT_LINES_THE_SEED_LOST = [
    'tf.config.set_logical_device_configuration(', 'physical_devices[0],', '[', '],', ')', 'EPOCHS=3',
    'tf.data.TextLineDataset(', ')',
    *['.shuffle(buffer_size=500)', '.batch(scaled_batch_size)', '.cache()', '.prefetch(tf.data.AUTOTUNE)', ')',
      'wiki_val_ds=(', 'tf.data.TextLineDataset(wiki_dir+"wiki.valid.tokens")'],
    *['.shuffle(buffer_size=500)', '.batch(scaled_batch_size)', '.cache()', '.prefetch(tf.data.AUTOTUNE)', ')',
      'wiki_test_ds=(', 'tf.data.TextLineDataset(wiki_dir+"wiki.test.tokens")'],
    '.shuffle(buffer_size=500)', '.batch(scaled_batch_size)', '.cache()', '.prefetch(tf.data.AUTOTUNE)', ')',
    'initial_learning_rate=scaled_learning_rate,', 'decay_steps=total_training_steps,', 'end_learning_rate=0.0,', ')',
    'print(', ')', 'tf.keras.callbacks.TensorBoard(log_dir="./logs"),', 'PrintLR(),', ']',
    'print(tf.config.list_physical_devices("GPU"))',
    'model_dist.compile(', 'loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),',
    'optimizer=tf.keras.optimizers.AdamW(learning_rate=scaled_learning_rate),',
    'weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],', 'jit_compile=False,', ')', 'model_dist.fit(',
    ')', 'model_dist.evaluate(wiki_test_ds)',
]


@unittest.skipUnless(os.path.isdir(SEEDS), "the seed tutorials are not in ../shared/seeds")
class SeedTextTest(unittest.TestCase):
    def test_the_retrieval_example_is_the_seed_with_only_its_imports_changed(self):
        self.assertEqual(lines_not_in_seed("keras-rs-data-parallel-retrieval.txt", "movielens_retrieval.py"), [])

    def test_the_bert_example_adds_only_the_lines_the_seeds_text_lost(self):
        self.assertEqual(lines_not_in_seed("kerasnlp-bert-mlm-tf-distribute.txt", "bert_mlm.py"),
                         BERT_LINES_THE_SEED_LOST)


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
            tutorial = runpy.run_path(os.path.join(EXAMPLES, "movielens_retrieval.py"), run_name="__main__")
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


@unittest.skipUnless(os.path.isfile(os.path.join(SHARED_DATA, "mnist", "train-labels-idx1-ubyte.gz")),
                     "MNIST is not in CHORUS_SHARED_DATA")
class MnistTutorialTest(unittest.TestCase):
    def test_the_tutorial_trains_as_the_cpp_port_then_resumes_from_its_checkpoint(self):
        os.environ["CHORUS_SHARED_DATA"] = SHARED_DATA
        keras.utils.set_random_seed(42)  # the C++ port's seed
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as cwd, contextlib.chdir(cwd), contextlib.redirect_stdout(out):
            tutorial = runpy.run_path(os.path.join(EXAMPLES, "mnist_mlp.py"), run_name="__main__")
            self.assertEqual(os.listdir("ckpt"), ["ckpt-1.keras"])
        devices = tutorial["strategy"].num_replicas_in_sync
        self.assertIn(f"Number of devices: {devices}", out.getvalue())
        logs = epoch_logs(out.getvalue())
        self.assertEqual(len(logs), 5)  # fit's 2 epochs, evaluate, then run_training's 2 fits
        for got, printed in zip(tutorial["model"].history.history["loss"], [logs[0]["loss"], logs[1]["loss"]], strict=True):
            self.assertAlmostEqual(got, printed, delta=6e-5)  # model.history: the last fit's

        cli = subprocess.run([os.environ["CHORUS_CLI"], "train", "mnist-mlp", "--data", os.path.join(SHARED_DATA, "mnist"),
                              "--epochs", "2", "--devices", str(devices), "--verbose", "2", "--seed", "42"],
                             check=True, capture_output=True, text=True)
        cpp = epoch_logs(cli.stdout)  # 2 epochs, then evaluate
        self.assertEqual(len(cpp), 3)
        for step, (got, want) in enumerate(zip(logs[:3], cpp)):  # printed to 4 decimals
            self.assertEqual(set(got), set(want))
            for name in want:
                self.assertAlmostEqual(got[name], want[name], delta=6e-5, msg=f"{name}, line {step + 1}")

        # run_training twice: a fresh model for one epoch, then the same model restored from
        # ckpt-1.keras for another, on raw pixels, where one epoch more cuts the loss 3-5x.
        first, second = logs[3:]
        self.assertLess(second["loss"], first["loss"] / 2)


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
            run = subprocess.run([sys.executable, os.path.join(EXAMPLES, "bert_mlm.py")], cwd=home, env=env,
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
