"""`from chorus import tf`: the parts of TensorFlow the tutorials touch, on chorus (the
input pipeline, a few ops and dtypes, MirroredStrategy, logical devices). Anything else
raises NotImplementedError naming it."""
import sys as _sys

from chorus import _chorus, data as _data, keras as _keras
from chorus._shim import Shim as _Shim, module_getattr as _module_getattr

int32, int64, float32, bfloat16, string, uint8 = "int32", "int64", "float32", "bfloat16", "string", "uint8"


def constant(value, dtype=None):
    """tf.constant: a chorus tensor (Python ints become int32, floats float32)."""
    return _chorus.ops.convert_to_tensor(value, dtype)


maximum = _chorus.ops.maximum
minimum = _chorus.ops.minimum
cast = _chorus.ops.cast
Tensor = _chorus.Tensor

data = _Shim("tf.data", "tf.data on chorus.data", Dataset=_data.Dataset, AUTOTUNE=_data.AUTOTUNE,
             TextLineDataset=_data.Dataset.text_line)
strings = _Shim("tf.strings", "tf.strings on chorus's string ops", to_number=_chorus.strings.to_number,
               length=_chorus.strings.length, lower=_chorus.strings.lower)
keras = _keras


class MirroredStrategy:
    """tf.distribute.MirroredStrategy: synchronous replicas over the local devices (or the
    given ones). Models compiled inside scope() train data-parallel."""

    def __init__(self, devices=None):
        self._devices = _local_devices() if devices is None else [_device(d) for d in devices]
        self._distribution = _keras.distribution.DataParallel(devices=self._devices)

    @property
    def num_replicas_in_sync(self):
        return len(self._devices)

    @property
    def extended(self):
        raise NotImplementedError("tf.distribute.MirroredStrategy.extended is not provided by chorus")

    def scope(self):
        return _Scope(self._distribution)


class MultiWorkerMirroredStrategy:
    """tf.distribute.MultiWorkerMirroredStrategy: joins the job the environment describes
    (`chorus launch -n 2 python3 train.py`, TF_CONFIG, ...) and mirrors over every worker's
    local devices. Models compiled inside scope() train in lockstep on all workers."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        if cluster_resolver is not None or communication_options is not None:
            raise NotImplementedError("tf.distribute.MultiWorkerMirroredStrategy: chorus finds the job in the "
                                      "environment; cluster_resolver and communication_options are not supported")
        self._strategy = _chorus.MultiWorkerMirroredStrategy()

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def cluster_resolver(self):
        return _ClusterResolver(self._strategy.task_id, self._strategy.num_workers)

    def scope(self):
        return _Scope(self._strategy.distribution)


class _ClusterResolver:
    """What a tutorial reads of tf's cluster resolver: this worker's task."""

    def __init__(self, task_id, num_workers):
        self.task_type, self.task_id, self.num_workers = "worker", task_id, num_workers


class _Scope:
    """Makes a distribution current while it is open, then restores the previous one."""

    def __init__(self, distribution):
        self._distribution, self._previous = distribution, None

    def __enter__(self):
        self._previous = _keras.distribution.distribution()
        _keras.distribution.set_distribution(self._distribution)
        return self

    def __exit__(self, *exc):
        _keras.distribution.set_distribution(self._previous)
        return False


def _local_devices():
    return _chorus.list_devices("")


def _device(name):
    """A chorus device from "/cpu:1", "CPU:1", "/job:localhost/.../device:CPU:1" or a device."""
    if isinstance(name, _chorus.Device):
        return name
    if isinstance(name, _Device):
        name = name.name
    kind, _, index = str(name).rsplit("/", 1)[-1].replace("device:", "").partition(":")
    if kind.upper() not in ("CPU", "GPU") or not index.isdigit():
        raise NotImplementedError(f"tf.distribute.MirroredStrategy: chorus runs on its CPU devices, not '{name}'")
    return _local_devices()[int(index)]


class LogicalDeviceConfiguration:
    """tf.config.LogicalDeviceConfiguration: one logical device (memory limits do not apply on a CPU)."""

    def __init__(self, memory_limit=None, experimental_priority=None, experimental_device_ordinal=None):
        self.memory_limit = memory_limit


class _Device:
    def __init__(self, name, device_type):
        self.name, self.device_type = name, device_type

    def __repr__(self):
        return f"{type(self).__name__}(name='{self.name}', device_type='{self.device_type}')"


class PhysicalDevice(_Device):
    pass


class LogicalDevice(_Device):
    pass


_told_about_gpus = []


def _kind(device_type):
    """"CPU", or "GPU", for which chorus's CPU devices stand in (said once): they are what
    its replicas run on, as a tutorial splitting one GPU into two expects."""
    kind = (device_type or "CPU").upper()
    if kind not in ("CPU", "GPU"):
        raise NotImplementedError(f"tf.config: chorus has CPU devices, not '{device_type}'")
    if kind == "GPU" and not _told_about_gpus:
        _told_about_gpus.append(True)
        print("chorus: tf.config: this host has no GPU; chorus's logical CPU devices stand in for 'GPU'",
              file=_sys.stderr)
    return kind


def list_physical_devices(device_type=None):
    """tf.config.list_physical_devices: the host, as one device."""
    kind = _kind(device_type)
    return [PhysicalDevice(f"/physical_device:{kind}:0", kind)]


def list_logical_devices(device_type=None):
    """tf.config.list_logical_devices: chorus's devices (CHORUS_CPU_DEVICES, one per core by default)."""
    kind = _kind(device_type)
    return [LogicalDevice(f"/device:{kind}:{d.id}", kind) for d in _local_devices()]


def set_logical_device_configuration(device, logical_devices):
    """Splits the host into len(logical_devices) logical devices (chorus's set_cpu_devices)."""
    _chorus.set_cpu_devices(len(logical_devices))


# `with tf.GradientTape() as tape:` in a custom train_step; tape.gradient() after the block.
GradientTape = _chorus.GradientTape

distribute = _Shim("tf.distribute", "tf.distribute on chorus's data parallelism", MirroredStrategy=MirroredStrategy,
                   MultiWorkerMirroredStrategy=MultiWorkerMirroredStrategy)
config = _Shim("tf.config", "tf.config's device listing on chorus's devices",
               LogicalDeviceConfiguration=LogicalDeviceConfiguration, list_physical_devices=list_physical_devices,
               list_logical_devices=list_logical_devices,
               set_logical_device_configuration=set_logical_device_configuration)

__getattr__ = _module_getattr("tf", globals())
