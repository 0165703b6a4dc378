"""Keras callbacks of Horovod's tutorial, for Keras 3."""

import os

import keras
import numpy as np

from .. import _hvd, _ops
from ..tensorflow import broadcast_variables


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """At the start of training, every rank takes root_rank's weights and optimizer state
    (the optimizer is built first if it has not been), so all ranks start alike, also after
    root alone resumed from a checkpoint. local_variables (Horovod's): variables each rank
    keeps its own of, left out. device (Horovod's placement) is taken as a string and
    changes nothing: the broadcast runs where the runtime does."""

    def __init__(self, root_rank=0, device="", local_variables=None):
        super().__init__()
        _check_device(device)
        self.root_rank = root_rank
        self.local_variables = list(local_variables or ())

    def on_train_begin(self, logs=None):
        model = self.model
        variables = list(model.weights)
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None:
            if not optimizer.built:
                optimizer.build(model.trainable_variables)
            variables += list(optimizer.variables)
        local = {id(v) for v in self.local_variables}
        variables = [v for v in variables if id(v) not in local]
        broadcast_variables(variables, root_rank=self.root_rank, name="BroadcastGlobalVariablesCallback")


def _check_device(device):
    if not isinstance(device, str):
        raise TypeError(f"hvd: a callback's device is a device name (a str, Horovod's placement hint), not "
                        f"{type(device).__name__}")


class MetricAverageCallback(keras.callbacks.Callback):
    """At the end of each epoch, every metric in the logs becomes its average across ranks,
    so what rank 0 prints and checkpoints by describes all the data. Put it before the
    callbacks that read the logs (ModelCheckpoint, ReduceLROnPlateau). device (Horovod's
    placement) is taken as a string and changes nothing."""

    def __init__(self, device=""):
        super().__init__()
        _check_device(device)

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        values = np.array([float(logs[k]) for k in names], dtype=np.float64)
        averaged = _ops.allreduce(values, name=f"MetricAverageCallback.{epoch}", op=_ops.Average)
        for k, v in zip(names, averaged):
            logs[k] = float(v)


# Horovod's callbacks take momentum_correction (scale SGD's momentum with a changed rate for
# one batch); Keras 3 optimizers compile their momentum into the train step as a constant,
# so there is nothing to correct, and the argument is taken for Horovod's signature only.


class LearningRateWarmupCallback(keras.callbacks.Callback):
    """Horovod's warm-up: over the first warmup_epochs the learning rate climbs from
    initial_lr / size to initial_lr (Goyal et al., "Accurate, Large Minibatch SGD"), step by
    step when steps_per_epoch is given (or known to fit), else epoch by epoch."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None, verbose=0):
        super().__init__()
        self.momentum_correction = momentum_correction  # see above: nothing to correct in Keras 3
        self.initial_lr = float(initial_lr)
        self.warmup_epochs = warmup_epochs
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self._epoch = 0

    def multiplier(self, epoch):
        size = _hvd.size()
        return 1.0 / size * (epoch * (size - 1) / self.warmup_epochs + 1)

    def _set(self, epoch):
        self.model.optimizer.learning_rate.assign(self.initial_lr * self.multiplier(epoch))

    def on_train_begin(self, logs=None):
        if self.steps_per_epoch is None and self.params:
            self.steps_per_epoch = self.params.get("steps")

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if epoch < self.warmup_epochs:
            self._set(epoch)

    def on_train_batch_begin(self, batch, logs=None):
        if self._epoch < self.warmup_epochs and self.steps_per_epoch:
            self._set(self._epoch + batch / self.steps_per_epoch)

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.warmup_epochs - 1:
            self.model.optimizer.learning_rate.assign(self.initial_lr)
            if self.verbose and _hvd.rank() == 0:
                print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {self.initial_lr:g}.")


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Horovod's schedule: from start_epoch up to end_epoch (not included; None: to the end)
    the learning rate is initial_lr * multiplier, a number or a function of the epoch. With
    staircase (the default, and always with a number) it is set as each epoch begins;
    without, at every batch, the epoch counted in fractions (epoch + batch / steps_per_epoch,
    fit's steps when not given). Several schedules chain, as in Horovod's ImageNet example.
    The rate in force is logged as "lr" as each epoch ends."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("LearningRateScheduleCallback needs initial_lr, the rate the multiplier scales")
        self.initial_lr = float(initial_lr)
        self.multiplier = multiplier if callable(multiplier) else (lambda epoch: multiplier)
        self.staircase = staircase or not callable(multiplier)
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.momentum_correction = momentum_correction  # see above: nothing to correct in Keras 3
        self.steps_per_epoch = steps_per_epoch
        self._epoch = 0

    def _in_scope(self):
        return self._epoch >= self.start_epoch and (self.end_epoch is None or self._epoch < self.end_epoch)

    def _set(self, epoch):
        self.model.optimizer.learning_rate.assign(self.initial_lr * self.multiplier(epoch))

    def on_train_begin(self, logs=None):
        if self.staircase or self.steps_per_epoch:
            return
        self.steps_per_epoch = (self.params or {}).get("steps")
        if not self.steps_per_epoch:
            raise ValueError("LearningRateScheduleCallback(staircase=False) cannot tell the steps per epoch from "
                             "fit (a dataset of unknown length): give steps_per_epoch")

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if not self._in_scope():
            return
        if not self.staircase:
            self._set(self._epoch + batch / self.steps_per_epoch)
        elif batch == 0:
            self._set(self._epoch)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """Horovod's: a ModelCheckpoint that keeps only the best model by `monitor` (the whole
    model, save_best_only). Horovod's Spark estimator sets its filepath after making it;
    elsewhere set `.filepath` (or give filepath=) before fit: a .keras file, written by the
    ranks that have the callback (give it to rank 0 alone, as Horovod's examples do)."""

    def __init__(self, monitor="val_loss", verbose=0, mode="auto", save_freq="epoch", filepath=None):
        # Keras 3 checks the path as the callback is made, where Horovod's comes later: a
        # stand-in passes the check, and on_train_begin checks the real one.
        super().__init__("best.keras", monitor=monitor, verbose=verbose, save_best_only=True,
                         save_weights_only=False, mode=mode, save_freq=save_freq)
        self.filepath = filepath

    def on_train_begin(self, logs=None):
        if self.filepath is None:
            raise ValueError("BestModelCheckpoint has no filepath: set .filepath (or give filepath=) before fit, "
                             "a .keras file; Horovod's Spark estimator sets it, outside Spark nothing does")
        self.filepath = os.fspath(self.filepath)
        if not self.filepath.endswith(".keras"):
            raise ValueError(f"BestModelCheckpoint saves the whole model: its filepath must end in .keras, "
                             f"not {self.filepath!r}")
        super().on_train_begin(logs)
