"""The Python package against chorus's C++ on the same work, measured in one run; one JSON
line per case with the ratio (Python's time / C++'s).

  retrieval_tutorial: examples/python/movielens_retrieval.py (the keras-rs tutorial as
    printed) against `chorus train movielens-retrieval --devices 0` (its C++ port, same
    devices): whole processes, and the phases (data: everything before fit; fit, with
    validation; the rest).
  mnist_fit: the MNIST tutorial's fit (examples/python/mnist_mlp.py's model and datasets,
    2 epochs with validation, every local device) against `chorus train mnist-mlp`'s fit
    (its C++ port's): what calling fit from Python costs where a step is ~1 ms.
  python_overrides: a model whose call and compute_loss are Python methods against the
    same model as a functional one, both fit from Python: what Python overrides cost a
    step (the MNIST tutorial's MLP at batch 64, where a step is a fraction of a millisecond).
  replicas: both models at batch 1024 on 2 data-parallel replicas against 1 device. The
    Python one's replicas take the GIL in turn for its Python code only; if they held it
    through the C++ part too, its 2-replica gain would fall below the functional one's.

  PYTHONPATH=build/python python3 bench/python_bench.py --cli build/chorus --data ../shared/data
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "python", "movielens_retrieval.py")


def cpu_name():
    with open("/proc/cpuinfo") as f:
        return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), platform.machine())


def wall(command, env):
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


PHASES = """
import time, runpy
source = open({example!r}).read()
before, rest = source.split("history = model.fit(", 1)
fit_call, after = rest.split(")\\n", 1)
scope = {{"__name__": "__main__"}}
t0 = time.perf_counter(); exec(before, scope)
t1 = time.perf_counter(); exec("history = model.fit(" + fit_call + ")\\n", scope)
t2 = time.perf_counter(); exec(after, scope)
t3 = time.perf_counter()
print("PHASES", t1 - t0, t2 - t1, t3 - t2)
"""


def retrieval_tutorial(args, env):
    py, cpp, phases, cpp_phases = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        timings = os.path.join(tmp, "timings.json")
        for _ in range(args.repeats):  # alternated, so both see the same machine
            py.append(wall([sys.executable, EXAMPLE], env))
            cpp.append(wall([args.cli, "train", "movielens-retrieval", "--data", os.path.join(args.data, "ml-100k"),
                             "--devices", "0", "--verbose", "1", "--timings", timings], env))
            with open(timings) as f:
                t = json.load(f)
            cpp_phases.append((t["data_s"], t["fit_s"], t["predict_s"]))
            run = subprocess.run([sys.executable, "-c", PHASES.format(example=EXAMPLE)], env=env,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"python_bench: the tutorial's phases failed:\n{run.stderr[-2000:]}")
            out = run.stdout
            phases.append(tuple(float(v) for v in out.split("PHASES", 1)[1].split()))
    median = statistics.median
    return {
        "python_wall_s": median(py), "cpp_wall_s": median(cpp), "ratio": median(py) / median(cpp),
        "python_data_s": median(p[0] for p in phases), "python_fit_s": median(p[1] for p in phases),
        "python_rest_s": median(p[2] for p in phases),
        "cpp_data_s": median(p[0] for p in cpp_phases), "cpp_fit_s": median(p[1] for p in cpp_phases),
        "fit_ratio": median(p[1] for p in phases) / median(p[1] for p in cpp_phases),
    }


MNIST_EXAMPLE = os.path.join(HERE, "..", "examples", "python", "mnist_mlp.py")
MNIST_FIT = """
import time
source = open({example!r}).read()
scope = {{"__name__": "bench"}}
exec(source.split("# Create a MirroredStrategy.", 1)[0], scope)  # the imports and functions
tf, keras = scope["tf"], scope["keras"]
keras.utils.set_random_seed(42)
strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    model = scope["get_compiled_model"]()
    train_dataset, val_dataset, _ = scope["get_dataset"]()
    start = time.perf_counter()
    model.fit(train_dataset, epochs=2, validation_data=val_dataset, verbose=0)
    print("FIT", time.perf_counter() - start)
"""


def mnist_fit(args, env):
    py, cpp = [], []
    with tempfile.TemporaryDirectory() as tmp:
        timings = os.path.join(tmp, "timings.json")
        for _ in range(args.repeats):  # alternated, so both see the same machine
            run = subprocess.run([sys.executable, "-c", MNIST_FIT.format(example=MNIST_EXAMPLE)], env=env,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"python_bench: the MNIST fit failed:\n{run.stderr[-2000:]}")
            py.append(float(run.stdout.split("FIT", 1)[1].split()[0]))
            subprocess.run([args.cli, "train", "mnist-mlp", "--data", os.path.join(args.data, "mnist"), "--epochs", "2",
                            "--devices", "0", "--verbose", "0", "--seed", "42", "--timings", timings], env=env,
                           check=True, stdout=subprocess.DEVNULL)
            with open(timings) as f:
                cpp.append(json.load(f)["fit_s"])
    median = statistics.median
    return {"python_fit_s": median(py), "cpp_fit_s": median(cpp), "ratio": median(py) / median(cpp)}


def mlp_models():
    """The MNIST tutorial's MLP twice: call and compute_loss in Python, and functional."""
    from chorus import keras

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    class MLP(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = [keras.layers.Dense(256, activation="relu") for _ in range(2)]
            self.out = keras.layers.Dense(10)

        def call(self, inputs, training=False):
            for layer in self.hidden:
                inputs = layer(inputs)
            return self.out(inputs)

        def compute_loss(self, x, y, y_pred, sample_weight, training=True):
            return loss(y, y_pred, sample_weight)

    def functional():
        inputs = keras.Input(shape=(784,))
        hidden = keras.layers.Dense(256, activation="relu")(keras.layers.Dense(256, activation="relu")(inputs))
        return keras.Model(inputs, keras.layers.Dense(10)(hidden))

    return (MLP, None), (functional, loss)


def steps_per_s(make, compiled_loss, batch_size, epochs, distribution=None):
    from chorus import keras

    rng = np.random.default_rng(0)
    x = rng.random((batch_size * 100, 784)).astype(np.float32)
    y = rng.integers(0, 10, batch_size * 100).astype(np.int32)
    keras.distribution.set_distribution(distribution)
    try:
        model = make()
        model.compile(optimizer="adam", loss=compiled_loss)
        model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0)  # warm-up
        start = time.perf_counter()
        model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0)
        return 100 * epochs / (time.perf_counter() - start)
    finally:
        keras.distribution.set_distribution(None)


def python_overrides(args):
    (subclassed, _), (functional, loss) = mlp_models()
    python_call = steps_per_s(subclassed, None, 64, args.epochs)
    reference = steps_per_s(functional, loss, 64, args.epochs)
    return {"model": "MLP 784-256-256-10, Adam, batch 64", "python_call_steps_per_s": python_call,
            "functional_steps_per_s": reference, "ratio": reference / python_call}


def replicas(args):
    from chorus import keras

    (subclassed, _), (functional, loss) = mlp_models()
    two = keras.distribution.DataParallel(devices=keras.distribution.list_devices()[:2])
    out = {"model": "MLP 784-256-256-10, Adam, batch 1024"}
    for name, make, compiled_loss in (("python_call", subclassed, None), ("functional", functional, loss)):
        one_device = steps_per_s(make, compiled_loss, 1024, max(args.epochs // 5, 1))
        two_replicas = steps_per_s(make, compiled_loss, 1024, max(args.epochs // 5, 1), two)
        out.update({f"{name}_1_device_steps_per_s": one_device, f"{name}_2_replicas_steps_per_s": two_replicas,
                    f"{name}_2_over_1": two_replicas / one_device})
    out["ratio"] = out["functional_2_over_1"] / out["python_call_2_over_1"]
    return out


CASES = {"retrieval_tutorial": retrieval_tutorial, "mnist_fit": mnist_fit, "python_overrides": python_overrides,
         "replicas": replicas}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", default=os.path.join(HERE, "..", "build", "chorus"))
    parser.add_argument("--data", default=os.environ.get("CHORUS_SHARED_DATA", os.path.join(HERE, "..", "..", "shared", "data")))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--case", choices=list(CASES), action="append")
    args = parser.parse_args()
    env = dict(os.environ, CHORUS_SHARED_DATA=args.data)
    for case in args.case or list(CASES):
        result = CASES[case](args, env) if case in ("retrieval_tutorial", "mnist_fit") else CASES[case](args)
        print(json.dumps({"bench": "python", "case": case, "cpu": cpu_name(), **result}), flush=True)


if __name__ == "__main__":
    main()
