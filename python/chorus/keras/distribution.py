"""keras.distribution: DeviceMesh, DataParallel and the process's distribution, which
Model.compile captures (the model then splits each batch over the devices)."""
from chorus import _chorus

DeviceMesh = _chorus.DeviceMesh
DataParallel = _chorus.DataParallel
Distribution = _chorus.Distribution
list_devices = _chorus.list_devices
set_distribution = _chorus.set_distribution
distribution = _chorus.distribution

__all__ = ["DataParallel", "DeviceMesh", "Distribution", "distribution", "list_devices", "set_distribution"]
