"""hvd.tensorflow.elastic: Horovod's elastic API for TensorFlow (`hvd.elastic` after
`import hvd.tensorflow as hvd`). Under `hvdrun --min-np N` a peer's failure puts back the
last commit(), re-forms the world of the ranks left, syncs from the new rank 0 and calls
the training function again (hvd._elastic has the loop). TensorFlow reports what a
graph's hvd op raised as its own error; run() knows hvd's among them.
"""

import numpy as np
import tensorflow as tf

from .._elastic import HostsUpdatedInterrupt, ObjectState, State
from .._elastic import run as _run

__all__ = ["HostsUpdatedInterrupt", "ObjectState", "State", "TensorFlowKerasState", "TensorFlowState", "run"]


def _peer_failure(error):
    """A peer's failure inside a tf.function or model.fit arrives as a tf.errors.OpError
    whose message carries the HvdPeerError that hvd's op raised."""
    if isinstance(error, tf.errors.OpError) and "HvdPeerError" in str(error):
        return error
    return None


def run(func):
    """Horovod's decorator (see hvd._elastic.run), also for errors raised inside graphs."""
    return _run(func, peer_failure=_peer_failure)


class TensorFlowState(ObjectState):
    """Horovod's: tf.Variables (values kept on commit, put back on restore, rank 0's on
    sync) and picklable attributes."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None:
            raise ValueError("hvd: TensorFlowState(session=...) is TensorFlow 1's; hvd runs TensorFlow 2 eagerly")
        self.variables = list(variables or [])
        self._saved_values = []
        super().__init__(**kwargs)
        self._save_variables()

    def _tracked(self):
        return self.variables

    def _save_variables(self):
        self._saved_values = [np.array(v.numpy(), copy=True) for v in self._tracked()]

    def save(self):
        super().save()
        self._save_variables()

    def restore(self):
        super().restore()
        tracked = self._tracked()
        # Variables made since the commit (an optimizer's slots built by its first step)
        # have nothing to go back to: the sync gives them rank 0's.
        for variable, value in zip(tracked, self._saved_values):
            variable.assign(value)

    def sync(self):
        from . import broadcast_variables

        tracked = self._tracked()
        if tracked:
            broadcast_variables(tracked, root_rank=0, name="elastic.variables")
        super().sync()
        self._save_variables()


class TensorFlowKerasState(TensorFlowState):
    """Horovod's: a Keras model, its optimizer (the model's own when not given) and picklable
    attributes (epoch=0, batch=0, ...). The model's weights and the optimizer's variables
    are committed, restored and synced."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        super().__init__(**kwargs)

    def _tracked(self):
        variables = list(self.model.variables)
        if self.optimizer is not None:
            variables += [v for v in self.optimizer.variables if not any(v is m for m in variables)]
        return variables
