"""Making every rank start from the same state: root's parameters and optimizer state."""

import torch

from .. import _hvd, _ops


def broadcast_parameters(params, root_rank=0, process_set=None):
    """Overwrites every rank's tensors with root_rank's, in place. params: a state_dict
    (model.state_dict()), (name, tensor) pairs (model.named_parameters()), or tensors
    (list(model.parameters()), matched across ranks by their order, as in Horovod)."""
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        items = [p if isinstance(p, tuple) else (None, p) for p in params]
        if all(name is not None for name, _ in items):
            items.sort(key=lambda item: item[0])
    handles = []
    for i, (name, tensor) in enumerate(items):
        if not torch.is_tensor(tensor):
            raise TypeError(f"hvd.torch.broadcast_parameters: {name or f'item {i}'} is a {type(tensor).__name__}, "
                            "not a tensor")
        handles.append(_ops.broadcast_async_(tensor.data, root_rank, name=None if name is None else f"broadcast.{name}",
                                             process_set=process_set))
    for handle in handles:
        _ops.synchronize(handle)


def broadcast_optimizer_state(optimizer, root_rank=0, model=None, process_set=None):
    """Gives every rank root_rank's optimizer state and hyperparameters (after a resume
    from a checkpoint only root loaded, say). The state travels pickled, tensors on the CPU,
    and each rank moves them back to its parameters' devices. An optimizer without state
    yet gets it first, as Horovod's does: one step of the optimizer alone with zero
    gradients (left in .grad of the parameters that require grad), the parameters kept as
    they were. model (Horovod's, for its parameters' names) is accepted: the state travels
    whole here, so no names are needed."""
    if model is not None and not isinstance(model, torch.nn.Module):
        raise TypeError(f"hvd.torch.broadcast_optimizer_state: model must be a torch.nn.Module, not "
                        f"{type(model).__name__}")
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("hvd.torch.broadcast_optimizer_state: torch.optim.LBFGS keeps state it cannot load back")
    if not optimizer.state:
        _initialize_state(optimizer)
    state = optimizer.state_dict()
    in_set = process_set is None or process_set.included()
    if not in_set:
        return
    if _hvd.rank() == root_rank:
        payload = {"state": {k: {n: v.cpu() if torch.is_tensor(v) else v for n, v in s.items()}
                             for k, s in state["state"].items()},
                   "param_groups": state["param_groups"]}
    else:
        payload = None
    payload = _ops.broadcast_object(payload, root_rank, name="broadcast.optimizer_state", process_set=process_set)
    if _hvd.rank() != root_rank:
        optimizer.load_state_dict(payload)  # load_state_dict casts and moves to each parameter's device


def _initialize_state(optimizer):
    """Horovod's way to give an optimizer its state before its first step: a step with zero
    gradients. The step is the wrapped optimizer's own, never a DistributedOptimizer's
    (that would allreduce, and wait for ranks that do not step). Unlike Horovod's, the
    parameters are restored after it: a step with weight decay would move them."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    with torch.no_grad():
        kept = [p.detach().clone() for p in params]
        for p in params:
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam):
                    p.grad = p.grad.to_sparse()
    step = type(optimizer).__bases__[0].step if getattr(optimizer, "_hvd_distributed", False) else type(optimizer).step
    step(optimizer)
    with torch.no_grad():
        for p, before in zip(params, kept):
            p.copy_(before)


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """root_rank's picklable obj on every rank (an epoch to resume from, say)."""
    return _ops.broadcast_object(obj, root_rank, name=name, process_set=process_set)


def allgather_object(obj, name=None, process_set=None):
    return _ops.allgather_object(obj, name=name, process_set=process_set)
