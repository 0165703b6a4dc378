"""hvd.keras.elastic: Horovod's elastic API for Keras (`hvd.elastic` after `import
hvd.keras as hvd` or `import hvd.tensorflow.keras as hvd`): KerasState and the callbacks
that keep it as model.fit goes. Under `hvdrun --min-np N`:

    state = hvd.elastic.KerasState(model, batch=0, epoch=0)
    callbacks = [hvd.elastic.CommitStateCallback(state), hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.UpdateEpochStateCallback(state)]

    @hvd.elastic.run
    def train(state):
        model.fit(data, steps_per_epoch=steps, epochs=epochs - state.epoch, callbacks=callbacks)

The callbacks keep Horovod's meanings, so its scripts resume where they should: state.epoch
counts the epochs done across resets, and state.batch the last batch done in the epoch.
"""

import keras

from ..tensorflow.elastic import HostsUpdatedInterrupt, ObjectState, State, run
from ..tensorflow.elastic import TensorFlowKerasState as KerasState

__all__ = ["CommitStateCallback", "HostsUpdatedInterrupt", "KerasState", "ObjectState", "State",
           "UpdateBatchStateCallback", "UpdateEpochStateCallback", "run"]


class CommitStateCallback(keras.callbacks.Callback):
    """Commits the state every batches_per_commit batches and at the end of each epoch."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self._left = batches_per_commit

    def on_train_begin(self, logs=None):
        self._left = self.batches_per_commit  # the same count on every rank after a reset

    def on_batch_end(self, batch, logs=None):
        self._left -= 1
        if self._left == 0:
            self.state.commit()
            self._left = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """state.batch: the index of the last batch done in this epoch (0 once it ends). An
    epoch begun again after a reset runs only the steps it had left."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self._steps = None

    def on_train_begin(self, logs=None):
        self._steps = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.params.get("steps"):
            if self._steps is None:
                self._steps = self.params["steps"]
            self.params["steps"] = self._steps - self.state.batch

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """state.epoch: the epochs done across resets (Keras counts each fit() from 0), so that
    fit(epochs=epochs - state.epoch) runs what is left."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self._first = state.epoch

    def on_train_begin(self, logs=None):
        self._first = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self._first + epoch + 1
