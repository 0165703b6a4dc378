"""Making every rank start from the same state: root's parameters and optimizer state."""

import torch

from .. import _ops


def broadcast_parameters(params, root_rank=0):
    """Overwrites every rank's tensors with root_rank's, in place. params: a state_dict
    (model.state_dict()) or (name, tensor) pairs (model.named_parameters())."""
    items = sorted(params.items()) if isinstance(params, dict) else sorted(params, key=lambda item: item[0])
    handles = []
    for name, tensor in items:
        if not torch.is_tensor(tensor):
            raise TypeError(f"hvd.torch.broadcast_parameters: {name} is a {type(tensor).__name__}, not a tensor")
        handles.append(_ops.broadcast_async_(tensor.data, root_rank, name=f"broadcast.{name}"))
    for handle in handles:
        _ops.synchronize(handle)


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Gives every rank root_rank's optimizer state and hyperparameters (after a resume
    from a checkpoint only root loaded, say). The state travels pickled, tensors on the CPU,
    and each rank moves them back to its parameters' devices."""
    state = optimizer.state_dict()
    if _ops._hvd.rank() == root_rank:
        payload = {"state": {k: {n: v.cpu() if torch.is_tensor(v) else v for n, v in s.items()}
                             for k, s in state["state"].items()},
                   "param_groups": state["param_groups"]}
    else:
        payload = None
    payload = _ops.broadcast_object(payload, root_rank, name="broadcast.optimizer_state")
    if _ops._hvd.rank() != root_rank:
        optimizer.load_state_dict(payload)  # load_state_dict casts and moves to each parameter's device


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """root_rank's picklable obj on every rank (an epoch to resume from, say)."""
    return _ops.broadcast_object(obj, root_rank, name=name, process_set=process_set)


def allgather_object(obj, name=None, process_set=None):
    return _ops.allgather_object(obj, name=name, process_set=process_set)
