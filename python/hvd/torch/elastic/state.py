"""The state a training function works on: committed in memory, restored, and synced from
rank 0 at the start of run(), with Horovod's names."""

import copy
import functools
import os as _os

from ... import _hvd, _ops
from .sampler import ElasticSampler


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
        """Horovod raises here when hosts were added; hvdrun never adds ranks, so never."""

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


class TorchState(ObjectState):
    """Horovod's: a model and an optimizer (either may be None) and picklable attributes.
    Attributes with state_dict()/load_state_dict() (an ElasticSampler) are kept and synced
    through those."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        self.model, self.optimizer = model, optimizer
        self._handlers = {name: value for name, value in kwargs.items() if _has_state_dict(value)}
        plain = {name: value for name, value in kwargs.items() if name not in self._handlers}
        for name, value in self._handlers.items():
            setattr(self, name, value)
        self._saved_torch = {}
        super().__init__(**plain)
        self._save_torch()

    def _save_torch(self):
        saved = {name: copy.deepcopy(obj.state_dict()) for name, obj in self._with_state()}
        self._saved_torch = saved

    def _with_state(self):
        objects = [("model", self.model), ("optimizer", self.optimizer)] + list(self._handlers.items())
        return [(name, obj) for name, obj in objects if obj is not None]

    def save(self):
        super().save()
        self._save_torch()

    def restore(self):
        super().restore()
        for name, obj in self._with_state():
            obj.load_state_dict(copy.deepcopy(self._saved_torch[name]))

    def sync(self):
        from ..functions import broadcast_optimizer_state, broadcast_parameters

        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=0)
        for name, obj in self._handlers.items():
            state = obj.state_dict()
            if isinstance(obj, ElasticSampler):
                # What any rank processed this epoch is processed (Horovod's sampler does the same).
                state["processed_indices"] = set().union(*_ops.allgather_object(state["processed_indices"]))
            obj.load_state_dict(_ops.broadcast_object(state, 0, name=f"elastic.{name}"))
        super().sync()
        self._save_torch()


def _has_state_dict(value):
    return callable(getattr(value, "state_dict", None)) and callable(getattr(value, "load_state_dict", None))


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's: the hosts changed and the world re-forms. hvdrun's elastic jobs never add
    ranks, so nothing raises it here; scripts that catch it keep working."""

    def __init__(self, skip_sync=False):
        super().__init__("the job's hosts changed")
        self.skip_sync = skip_sync


def _elastic_job():
    """Started by hvdrun --min-np: a failed peer's world re-forms without it."""
    return _os.environ.get("HVD_ELASTIC_WORKER", "-1") not in ("", "-1")


def _reset():
    """Leaves the world that failed and joins the one hvdrun formed of the ranks left."""
    from ... import init, shutdown

    shutdown()
    init()


def run(func):
    """Horovod's decorator: func(state, ...) starts from rank 0's state on every rank. In an
    elastic job (hvdrun --min-np) a peer's failure puts back the last commit(), re-forms
    the world of the ranks left (new rank() and size()), calls the reset callbacks, syncs
    from the new rank 0 and calls func again. Otherwise a failure raises as outside run()."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except _hvd.HvdError:  # HorovodInternalError
                if not _elastic_job():
                    raise
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as interrupt:
                skip_sync = interrupt.skip_sync
            _reset()
            state.on_reset()

    return wrapper
