"""hvd.torch's collectives as autograd functions, as Horovod's are (horovod/torch/mpi_ops.py):
a tensor that requires grad gives a result with a grad_fn, and backward runs the matching
collective on the gradients. Like every blocking call without a name, that backward
collective is matched across ranks by order: every rank must run backward through the same
collectives in the same order, as it must under Horovod. The backward collective runs in
the forward's process set.

The gradients are Horovod's: allreduce reduces the output gradients with its own op and
scale factors; allgather averages them and keeps this rank's rows; broadcast averages them
on the root and gives zero elsewhere. Min, Max and Product have no such gradient: backward
through them raises HvdUsageError (Horovod reduced the gradients with the same op, which
gives no derivative of anything).
"""

import torch

from .. import HvdUsageError, _ops, rank, size


def _rank_in(process_set):
    return rank() if process_set is None else process_set.rank()


def _size_in(process_set):
    return size() if process_set is None else process_set.size()


def wants_grad(tensor):
    """Whether a result computed from tensor must carry a gradient back to it."""
    return isinstance(tensor, torch.Tensor) and tensor.requires_grad and torch.is_grad_enabled()


class Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, name, prescale_factor, postscale_factor, process_set=None):
        ctx.op, ctx.scale, ctx.process_set = op, (prescale_factor, postscale_factor), process_set
        return _scaled_allreduce(tensor.detach(), op, name, prescale_factor, postscale_factor, process_set)

    @staticmethod
    def backward(ctx, grad_output):
        _require_gradient("allreduce", ctx.op)
        grad = _scaled_allreduce(grad_output.contiguous(), ctx.op, None, *ctx.scale, ctx.process_set)
        return grad, None, None, None, None, None


def _require_gradient(what, op):
    """Only Sum and Average carry a gradient back; the other ops raise saying so."""
    if op not in (_ops.Average, _ops.Sum):
        raise HvdUsageError(f"hvd: {what} with op {op.name} has no gradient; only Sum or Average carry one back "
                            f"(detach the tensor, or reduce with one of those)")


class GroupedAllreduce(torch.autograd.Function):
    """Horovod's grouped allreduce: the gradients come back as one group too."""

    @staticmethod
    def forward(ctx, op, name, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op, ctx.scale, ctx.process_set = op, (prescale_factor, postscale_factor), process_set
        return tuple(grouped_allreduce([t.detach() for t in tensors], op, name, prescale_factor, postscale_factor,
                                       process_set))

    @staticmethod
    def backward(ctx, *grad_outputs):
        _require_gradient("grouped_allreduce", ctx.op)
        grads = grouped_allreduce([g.contiguous() for g in grad_outputs], ctx.op, None, *ctx.scale, ctx.process_set)
        return (None, None, None, None, None, *grads)


class Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set=None):
        ctx.shape, ctx.process_set = tensor.shape, process_set
        ctx.rows = tensor.shape[0] if tensor.dim() > 0 else 1  # a scalar is gathered as one row
        return _ops.allgather(tensor.detach(), name=name, process_set=process_set)

    @staticmethod
    def backward(ctx, grad_output):
        averaged = _ops.allreduce(grad_output.contiguous(), op=_ops.Average, process_set=ctx.process_set)
        rows = _ops.allgather(torch.tensor([ctx.rows], dtype=torch.int64), process_set=ctx.process_set)
        first = int(rows[: _rank_in(ctx.process_set)].sum())
        return averaged.narrow(0, first, ctx.rows).reshape(ctx.shape), None, None


class Reducescatter(torch.autograd.Function):
    """Horovod's gradient: every rank's output gradient gathered in rank order (rank r's rows
    came from every rank's rows of r), times size() for Sum (as Horovod's tests have it:
    output gradients of ones give inputs size()), and times the forward's scale factors."""

    @staticmethod
    def forward(ctx, tensor, op, name, prescale_factor, postscale_factor, process_set=None):
        ctx.op, ctx.scale, ctx.process_set = op, prescale_factor * postscale_factor, process_set
        return _scaled_reducescatter(tensor.detach(), op, name, prescale_factor, postscale_factor, process_set)

    @staticmethod
    def backward(ctx, grad_output):
        _require_gradient("reducescatter", ctx.op)
        gathered = _ops.allgather(grad_output.contiguous(), process_set=ctx.process_set)
        scale = ctx.scale * (_size_in(ctx.process_set) if ctx.op == _ops.Sum else 1)
        return gathered * scale if scale != 1.0 else gathered, None, None, None, None, None


def _scaled_reducescatter(tensor, op, name, prescale_factor, postscale_factor, process_set=None):
    return _scaled(_ops.reducescatter, tensor, op, name, prescale_factor, postscale_factor, process_set)


class Alltoall(torch.autograd.Function):
    """The gradient goes back the way the rows came: an alltoall of the output gradient with
    the splits this rank received."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set=None):
        out, received = _ops.alltoall_with_splits(tensor.detach(), splits, name=name, process_set=process_set)
        ctx.received, ctx.process_set = received, process_set
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx, grad_output, _received_grad):
        grad, _ = _ops.alltoall_with_splits(grad_output.contiguous(), ctx.received, process_set=ctx.process_set)
        return grad, None, None, None


class Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set=None):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return _ops.broadcast(tensor.detach(), root_rank, name=name, process_set=process_set)

    @staticmethod
    def backward(ctx, grad_output):
        averaged = _ops.allreduce(grad_output.contiguous(), op=_ops.Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:  # a job rank, as the forward's root is
            averaged.zero_()
        return averaged, None, None, None


def grouped_allreduce(tensors, op, name, prescale_factor, postscale_factor, process_set=None):
    """New tensors: every request is submitted before any is waited for, so the engine fuses
    them (one exchange for a list of small tensors); named name.0, name.1, ... when named."""
    handles = []
    for i, tensor in enumerate(tensors):
        handles.append(_ops.allreduce_async(_ops.scaled(tensor, prescale_factor),
                                            name=None if name is None else f"{name}.{i}", op=op,
                                            process_set=process_set))
    return [_ops.scale_in_place(_ops.synchronize(h), postscale_factor) for h in handles]


def _scaled_allreduce(tensor, op, name, prescale_factor, postscale_factor, process_set=None):
    return _scaled(_ops.allreduce, tensor, op, name, prescale_factor, postscale_factor, process_set)


def _scaled(collective, tensor, op, name, prescale_factor, postscale_factor, process_set=None):
    """collective(tensor * prescale_factor) * postscale_factor, scaled as Horovod scales
    (_ops.scale_in_place: the dtype kept, integers through float64)."""
    out = collective(_ops.scaled(tensor, prescale_factor), op=op, name=name, process_set=process_set)
    return _ops.scale_in_place(out, postscale_factor)
