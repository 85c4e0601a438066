"""Python constructors for chorus objects made from Keras's constructor arguments.

A C++ layer, optimizer, loss or metric is rebuilt from its Keras config by a registry;
these functions turn a Keras call (`Dense(64, activation="relu")`) into that config, so
names, defaults and the errors for unknown arguments are the C++ classes' own.
"""


def config_from_arguments(class_name, positional, args, kwargs):
    """The config of `class_name(*args, **kwargs)`, with `positional` naming args."""
    if len(args) > len(positional):
        raise TypeError(
            f"{class_name}() takes {len(positional)} positional argument(s) "
            f"({', '.join(positional) or 'none'}) but {len(args)} were given")
    config = dict(zip(positional, args))
    for key, value in kwargs.items():
        if key in config:
            raise TypeError(f"{class_name}() got multiple values for argument '{key}'")
        config[key] = value
    return config


def factory(class_name, positional, make, module):
    """A callable named `class_name` that makes the object from Keras's arguments."""

    def construct(*args, **kwargs):
        return make(class_name, config_from_arguments(class_name, positional, args, kwargs))

    construct.__name__ = construct.__qualname__ = class_name
    construct.__module__ = module
    construct.__doc__ = (f"keras {class_name}({', '.join(positional)}, **kwargs): "
                         f"Keras's arguments and defaults.")
    return construct


class Serialized:
    """An object C++ rebuilds from its Keras config (an initializer, a learning-rate
    schedule): its class name and constructor arguments, given as to_config()."""

    def __init__(self, class_name, config):
        self.class_name, self.config = class_name, config

    def to_config(self):
        return {"class_name": self.class_name, "config": self.config}

    def get_config(self):
        return dict(self.config)
