"""keras.distribution: DeviceMesh, DataParallel and the process's distribution, which
Model.compile captures (the model then splits each batch over the devices)."""
from chorus import _chorus

DeviceMesh = _chorus.DeviceMesh
DataParallel = _chorus.DataParallel
LayoutMap = _chorus.LayoutMap
ModelParallel = _chorus.ModelParallel
TensorLayout = _chorus.TensorLayout
Distribution = _chorus.Distribution
list_devices = _chorus.list_devices
set_distribution = _chorus.set_distribution
distribution = _chorus.distribution
# Joins the multi-worker job the environment describes (`chorus launch -n 2 python3 train.py`,
# TF_CONFIG, torchrun, Open MPI, Slurm); distributions made afterwards span every worker.
initialize = _chorus.initialize

__all__ = ["DataParallel", "DeviceMesh", "Distribution", "LayoutMap", "ModelParallel", "TensorLayout", "distribution",
           "initialize", "list_devices", "set_distribution"]
