"""keras.callbacks: the built-ins on chorus's C++ ones, and Callback to subclass in Python
(its hooks run with the GIL; the steps between them run without it)."""
from chorus import _chorus

Callback = _chorus.Callback
BackupAndRestore = _chorus.BackupAndRestore
CSVLogger = _chorus.CSVLogger
EarlyStopping = _chorus.EarlyStopping
History = _chorus.History
LearningRateScheduler = _chorus.LearningRateScheduler
ModelCheckpoint = _chorus.ModelCheckpoint
TensorBoard = _chorus.TensorBoard
TerminateOnNaN = _chorus.TerminateOnNaN


_LAMBDA_HOOKS = ("on_epoch_begin", "on_epoch_end", "on_train_begin", "on_train_end", "on_train_batch_begin",
                 "on_train_batch_end")


def LambdaCallback(**functions):
    """keras.callbacks.LambdaCallback: a callback whose hooks are the given functions. A
    class is made with only those hooks: a batch hook costs a GIL round trip per step."""
    unknown = sorted(set(functions) - set(_LAMBDA_HOOKS))
    if unknown:
        raise TypeError(f"LambdaCallback: unexpected hooks {unknown}; expected some of {list(_LAMBDA_HOOKS)}")
    hooks = {hook: (lambda fn: lambda self, *args: fn(*args))(fn) for hook, fn in functions.items()}
    return type("LambdaCallback", (Callback,), hooks)()


__all__ = ["BackupAndRestore", "CSVLogger", "Callback", "EarlyStopping", "History", "LambdaCallback",
           "LearningRateScheduler", "ModelCheckpoint", "TensorBoard", "TerminateOnNaN"]
