"""`from chorus import jax`: jax.devices() for the keras.distribution tutorials: chorus's
devices (logical CPU devices on a CPU host). Anything else raises NotImplementedError."""
from chorus import _chorus
from chorus._shim import module_getattr as _module_getattr


def devices(backend=None):
    """jax.devices(): the local devices keras.distribution spreads over."""
    return _chorus.list_devices(backend or "")


local_devices = devices

__getattr__ = _module_getattr("jax", globals())
