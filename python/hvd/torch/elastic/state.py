"""hvd.torch.elastic's state: a model, an optimizer and samplers beside picklable
attributes (the rest is hvd._elastic's)."""

import copy

from ... import _ops
from ..._elastic import ObjectState
from .sampler import ElasticSampler


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
