"""Horovod's elastic API without a framework: the State a training function works on
(committed in memory, restored, synced from rank 0), and run(), which re-forms the world
after a peer's failure in an elastic job (hvdrun --min-np). hvd.torch.elastic and
hvd.tensorflow.elastic add their frameworks' states."""

import copy
import functools
import os

from . import _hvd, _ops


class State:
    """Horovod's base: commit() keeps a copy to restore(); sync() makes every rank hold
    rank 0's. Reset callbacks are called once the world has re-formed (hvdrun --min-np)."""

    def __init__(self):
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Horovod's: raises HostsUpdatedInterrupt on every rank when hvdrun has formed a new
        world since this one (hvdrun --host-discovery-script started ranks), so that all of
        them leave for it at the same step. Collective in an elastic job, like commit()."""
        if _elastic_job() and _hvd.elastic_world_changed():
            raise HostsUpdatedInterrupt(skip_sync=False)

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError


class ObjectState(State):
    """Picklable attributes (epoch=0, batch=0, ...): kept on commit, put back on restore,
    broadcast from rank 0 on sync."""

    def __init__(self, **kwargs):
        super().__init__()
        self._names = list(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        self._saved = {}
        ObjectState.save(self)

    def _values(self):
        return {name: getattr(self, name) for name in self._names}

    def save(self):
        self._saved = copy.deepcopy(self._values())

    def restore(self):
        for name, value in copy.deepcopy(self._saved).items():
            setattr(self, name, value)

    def sync(self):
        if self._names:
            for name, value in _ops.broadcast_object(self._values(), 0, name="elastic.state").items():
                setattr(self, name, value)
            ObjectState.save(self)


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's: hvdrun formed a new world (it started ranks); run() re-forms every rank's
    world without putting back the last commit, and syncs the new ranks from rank 0."""

    def __init__(self, skip_sync=False):
        super().__init__("the job's hosts changed")
        self.skip_sync = skip_sync


def _elastic_job():
    """Started by hvdrun --min-np: a failed peer's world re-forms without it."""
    return os.environ.get("HVD_ELASTIC_WORKER", "-1") not in ("", "-1")


def _reset():
    """Leaves the world that failed and joins the one hvdrun formed of the ranks left."""
    from . import init, shutdown

    shutdown()
    init()


def run(func, peer_failure=lambda error: None):
    """Horovod's decorator: func(state, ...) starts from rank 0's state on every rank. In an
    elastic job (hvdrun --min-np) a peer's failure (HvdPeerError, or HvdTimeoutError: a peer
    that stopped answering, which hvdrun then takes out) puts back the last commit(), re-forms
    the world of the ranks left (new rank() and size()), calls the reset callbacks, syncs
    from the new rank 0 and calls func again. Otherwise a failure raises as outside run().
    peer_failure(error) turns a framework's own error into hvd's HvdPeerError (TensorFlow
    wraps what its graph's ops raise), or returns None for any other error."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except Exception as error:  # noqa: BLE001  sorted out below
                # A peer's going (HvdPeerError), or its silence (HvdTimeoutError: hvdrun
                # fails a rank frozen that long), is what a re-formed world mends; any other
                # error (a usage error, on every rank) would only come back in the next.
                peer_error = isinstance(error, (_hvd.HvdPeerError, _hvd.HvdTimeoutError))
                failure = error if peer_error else peer_failure(error)
                if isinstance(error, HostsUpdatedInterrupt):
                    skip_sync = error.skip_sync
                elif failure is None or not _elastic_job():
                    raise
                else:
                    state.restore()
                    skip_sync = False
            _reset()
            state.on_reset()

    return wrapper
