"""keras.Model (functional or subclassed in Python), keras.Sequential, load_model."""
from chorus import _chorus
from chorus.keras import layers as _layers
from chorus.keras._tracking import Tracking, base_with_instances_of


class Model(Tracking, _chorus.Model, metaclass=base_with_instances_of(_chorus.Model)):
    """keras.Model: Model(inputs, outputs) for the functional API, or subclass it and define
    call(inputs[, training]) (and optionally build(input_shape)); layers assigned as
    attributes are tracked."""

    _chorus_base = True

    def __init__(self, *args, inputs=None, outputs=None, name=None, **kwargs):
        if kwargs:
            raise TypeError(f"Model: unexpected keyword arguments {sorted(kwargs)}")
        if args:
            if len(args) != 2 or inputs is not None or outputs is not None:
                raise TypeError("Model: expected Model(inputs, outputs) or keyword arguments")
            inputs, outputs = args
        if (inputs is None) != (outputs is None):
            raise ValueError("Model: a functional model needs both inputs and outputs")
        if inputs is None:
            _chorus.Model.__init__(self, name or "")
        else:
            _chorus.Model.__init__(self, inputs, outputs, name or "")
        if type(self) is not Model:
            self._retain_python_object()


class Sequential(_chorus.Sequential):
    """keras.Sequential: a stack of layers; a keras.Input first fixes the input shape."""

    def __init__(self, layers=None, trainable=True, name=None):
        stack = [self._as_layer(layer) for layer in (layers or [])]
        _chorus.Sequential.__init__(self, stack, name or "")
        self.trainable = trainable

    def add(self, layer):
        _chorus.Sequential.add(self, self._as_layer(layer))

    @staticmethod
    def _as_layer(layer):
        if isinstance(layer, _chorus.Tensor):  # keras.Input(...) as the first entry
            return _layers.InputLayer(batch_shape=[None, *layer.shape[1:]], dtype=layer.dtype)
        return layer


load_model = _chorus.load_model

__all__ = ["Model", "Sequential", "load_model"]
