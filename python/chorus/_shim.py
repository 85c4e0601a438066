"""Shim modules: the few names of another library (tf, tfds, jax) that the tutorials use,
on chorus. Any other name raises NotImplementedError naming it, never a silent difference."""
import types


class Shim(types.ModuleType):
    """A module whose missing attributes raise NotImplementedError("tf.foo ...")."""

    def __init__(self, name, doc, **attributes):
        super().__init__(name, doc)
        self.__dict__.update(attributes)

    def __getattr__(self, attribute):
        return module_getattr(self.__name__, self.__dict__)(attribute)


def module_getattr(name, namespace):
    """A module-level __getattr__ (PEP 562) for the shim module `name` whose globals are `namespace`."""

    def __getattr__(attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        provided = sorted(k for k in namespace if not k.startswith("_"))
        raise NotImplementedError(f"{name}.{attribute} is not provided by chorus: its {name} shim covers what the "
                                  f"tutorials use ({', '.join(provided)})")

    return __getattr__
