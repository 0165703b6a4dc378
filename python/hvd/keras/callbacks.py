"""Keras callbacks of Horovod's tutorial, for Keras 3."""

import keras
import numpy as np

from .. import _ops
from ..tensorflow import broadcast_variables


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """At the start of training, every rank takes root_rank's weights and optimizer state
    (the optimizer is built first if it has not been), so all ranks start alike, also after
    root alone resumed from a checkpoint."""

    def __init__(self, root_rank=0):
        super().__init__()
        self.root_rank = root_rank

    def on_train_begin(self, logs=None):
        model = self.model
        variables = list(model.weights)
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None:
            if not optimizer.built:
                optimizer.build(model.trainable_variables)
            variables += list(optimizer.variables)
        broadcast_variables(variables, root_rank=self.root_rank, name="BroadcastGlobalVariablesCallback")


class MetricAverageCallback(keras.callbacks.Callback):
    """At the end of each epoch, every metric in the logs becomes its average across ranks,
    so what rank 0 prints and checkpoints by describes all the data. Put it before the
    callbacks that read the logs (ModelCheckpoint, ReduceLROnPlateau)."""

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        values = np.array([float(logs[k]) for k in names], dtype=np.float64)
        averaged = _ops.allreduce(values, name=f"MetricAverageCallback.{epoch}", op=_ops.Average)
        for k, v in zip(names, averaged):
            logs[k] = float(v)


class LearningRateWarmupCallback(keras.callbacks.Callback):
    """Horovod's warm-up: over the first warmup_epochs the learning rate climbs from
    initial_lr / size to initial_lr (Goyal et al., "Accurate, Large Minibatch SGD"), step by
    step when steps_per_epoch is given (or known to fit), else epoch by epoch."""

    def __init__(self, initial_lr, warmup_epochs=5, steps_per_epoch=None, verbose=0):
        super().__init__()
        self.initial_lr = float(initial_lr)
        self.warmup_epochs = warmup_epochs
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self._epoch = 0

    def multiplier(self, epoch):
        size = _ops._hvd.size()
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
            if self.verbose and _ops._hvd.rank() == 0:
                print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {self.initial_lr:g}.")
