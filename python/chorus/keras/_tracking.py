"""What Python subclasses of Layer and Model share: sublayers assigned as attributes are
tracked (their weights become the parent's, as Keras tracks them), and call() is invoked
with `training` only when it accepts it."""
import inspect

from chorus import _chorus

_accepts_training = {}


def _takes_training(cls, method):
    key = (cls, method)
    if key not in _accepts_training:
        parameters = inspect.signature(getattr(cls, method)).parameters
        _accepts_training[key] = "training" in parameters or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    return _accepts_training[key]


def _layers_in(value):
    if isinstance(value, _chorus.Layer):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _layers_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _layers_in(item)


def base_with_instances_of(cpp_class):
    """A metaclass for keras.Model and keras.layers.Layer, the Python classes users subclass:
    every chorus object of `cpp_class` counts as an instance of the class itself (a
    Sequential, a loaded model or a Dense is a keras.Model or a keras.layers.Layer, as in
    Keras), and of a subclass only when it is one."""

    class Meta(type(cpp_class)):
        def __instancecheck__(cls, instance):
            if cls.__dict__.get("_chorus_base", False) and isinstance(instance, cpp_class):
                return True
            return super().__instancecheck__(instance)

        def __subclasscheck__(cls, subclass):
            if cls.__dict__.get("_chorus_base", False) and issubclass(subclass, cpp_class):
                return True
            return super().__subclasscheck__(subclass)

    return Meta


class Tracking:
    """Mixin for Python subclasses of chorus's Layer and Model."""

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            tracked = self.__dict__.setdefault("_tracked_ids", set())
            for layer in _layers_in(value):
                if layer is not self and id(layer) not in tracked:
                    tracked.add(id(layer))
                    self._track(layer)
        super().__setattr__(name, value)

    def _chorus_call(self, inputs, training):
        if _takes_training(type(self), "call"):
            return self.call(inputs, training=training)
        return self.call(inputs)

    def _chorus_compute_loss(self, x, y, y_pred, sample_weight, training):
        if _takes_training(type(self), "compute_loss"):
            return self.compute_loss(x, y, y_pred, sample_weight, training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)
