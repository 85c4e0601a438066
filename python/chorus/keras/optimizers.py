"""keras.optimizers (and keras.optimizers.schedules): made from Keras's arguments."""
import types

from chorus import _chorus
from chorus._factories import Serialized, factory

Optimizer = _chorus.Optimizer

_POSITIONAL = {
    "SGD": ("learning_rate", "momentum", "nesterov"),
    "Adam": ("learning_rate", "beta_1", "beta_2", "epsilon", "amsgrad"),
    "AdamW": ("learning_rate", "weight_decay", "beta_1", "beta_2", "epsilon", "amsgrad"),
    "Adagrad": ("learning_rate", "initial_accumulator_value", "epsilon"),
    "RMSprop": ("learning_rate", "rho", "momentum", "epsilon", "centered"),
}

for _name, _positional in _POSITIONAL.items():
    globals()[_name] = factory(_name, _positional, _chorus.optimizer_from_config, __name__)


class LearningRateSchedule(Serialized):
    """A schedule given as an optimizer's learning_rate: its Keras config, which chorus's
    C++ schedule of the same name computes."""


_SCHEDULES = {
    "ExponentialDecay": ("initial_learning_rate", "decay_steps", "decay_rate", "staircase"),
    "PolynomialDecay": ("initial_learning_rate", "decay_steps", "end_learning_rate", "power", "cycle"),
    "PiecewiseConstantDecay": ("boundaries", "values"),
    "CosineDecay": ("initial_learning_rate", "decay_steps", "alpha"),
}
schedules = types.ModuleType("chorus.keras.optimizers.schedules", "keras.optimizers.schedules")
schedules.LearningRateSchedule = LearningRateSchedule
for _name, _positional in _SCHEDULES.items():
    setattr(schedules, _name, factory(_name, _positional, LearningRateSchedule, schedules.__name__))

__all__ = ["Optimizer", "schedules", *_POSITIONAL]
