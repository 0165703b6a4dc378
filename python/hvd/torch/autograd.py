"""hvd.torch's collectives as autograd functions, as Horovod's are (horovod/torch/mpi_ops.py):
a tensor that requires grad gives a result with a grad_fn, and backward runs the matching
collective on the gradients. Like every blocking call without a name, that backward
collective is matched across ranks by order: every rank must run backward through the same
collectives in the same order, as it must under Horovod.

The gradients are Horovod's: allreduce reduces the output gradients with its own op and
scale factors; allgather averages them and keeps this rank's rows; broadcast averages them
on the root and gives zero elsewhere. Min, Max and Product have no such gradient: backward
through them raises HvdUsageError (Horovod reduced the gradients with the same op, which
gives no derivative of anything).
"""

import torch

from .. import HvdUsageError, _ops, rank, size


def wants_grad(tensor):
    """Whether a result computed from tensor must carry a gradient back to it."""
    return isinstance(tensor, torch.Tensor) and tensor.requires_grad and torch.is_grad_enabled()


class Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, name, prescale_factor, postscale_factor):
        ctx.op, ctx.scale = op, (prescale_factor, postscale_factor)
        return _scaled_allreduce(tensor.detach(), op, name, prescale_factor, postscale_factor)

    @staticmethod
    def backward(ctx, grad_output):
        _require_gradient("allreduce", ctx.op)
        return _scaled_allreduce(grad_output.contiguous(), ctx.op, None, *ctx.scale), None, None, None, None


def _require_gradient(what, op):
    """Only Sum and Average carry a gradient back; the other ops raise saying so."""
    if op not in (_ops.Average, _ops.Sum):
        raise HvdUsageError(f"hvd: {what} with op {op.name} has no gradient; only Sum or Average carry one back "
                            f"(detach the tensor, or reduce with one of those)")


class GroupedAllreduce(torch.autograd.Function):
    """Horovod's grouped allreduce: the gradients come back as one group too."""

    @staticmethod
    def forward(ctx, op, name, prescale_factor, postscale_factor, *tensors):
        ctx.op, ctx.scale = op, (prescale_factor, postscale_factor)
        return tuple(grouped_allreduce([t.detach() for t in tensors], op, name, prescale_factor, postscale_factor))

    @staticmethod
    def backward(ctx, *grad_outputs):
        _require_gradient("grouped_allreduce", ctx.op)
        grads = grouped_allreduce([g.contiguous() for g in grad_outputs], ctx.op, None, *ctx.scale)
        return (None, None, None, None, *grads)


class Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name):
        ctx.shape = tensor.shape
        ctx.rows = tensor.shape[0] if tensor.dim() > 0 else 1  # a scalar is gathered as one row
        return _ops.allgather(tensor.detach(), name=name)

    @staticmethod
    def backward(ctx, grad_output):
        averaged = _ops.allreduce(grad_output.contiguous(), op=_ops.Average)
        rows = _ops.allgather(torch.tensor([ctx.rows], dtype=torch.int64))
        first = int(rows[: rank()].sum())
        return averaged.narrow(0, first, ctx.rows).reshape(ctx.shape), None


class Reducescatter(torch.autograd.Function):
    """Horovod's gradient: every rank's output gradient gathered in rank order (rank r's rows
    came from every rank's rows of r), times size() for Sum (as Horovod's tests have it:
    output gradients of ones give inputs size()), and times the forward's scale factors."""

    @staticmethod
    def forward(ctx, tensor, op, name, prescale_factor, postscale_factor):
        ctx.op, ctx.scale = op, prescale_factor * postscale_factor
        return _scaled_reducescatter(tensor.detach(), op, name, prescale_factor, postscale_factor)

    @staticmethod
    def backward(ctx, grad_output):
        _require_gradient("reducescatter", ctx.op)
        gathered = _ops.allgather(grad_output.contiguous())
        scale = ctx.scale * (size() if ctx.op == _ops.Sum else 1)
        return gathered * scale if scale != 1.0 else gathered, None, None, None, None


def _scaled_reducescatter(tensor, op, name, prescale_factor, postscale_factor):
    return _scaled(_ops.reducescatter, tensor, op, name, prescale_factor, postscale_factor)


class Alltoall(torch.autograd.Function):
    """The gradient goes back the way the rows came: an alltoall of the output gradient with
    the splits this rank received."""

    @staticmethod
    def forward(ctx, tensor, splits, name):
        out, received = _ops.alltoall(tensor.detach(), splits=splits, name=name)
        ctx.received = received
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx, grad_output, _received_grad):
        grad, _ = _ops.alltoall(grad_output.contiguous(), splits=ctx.received)
        return grad, None, None


class Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name):
        ctx.root_rank = root_rank
        return _ops.broadcast(tensor.detach(), root_rank, name=name)

    @staticmethod
    def backward(ctx, grad_output):
        averaged = _ops.allreduce(grad_output.contiguous(), op=_ops.Average)
        if rank() != ctx.root_rank:
            averaged.zero_()
        return averaged, None, None


def grouped_allreduce(tensors, op, name, prescale_factor, postscale_factor):
    """New tensors: every request is submitted before any is waited for, so the engine fuses
    them (one exchange for a list of small tensors); named name.0, name.1, ... when named."""
    handles = []
    for i, tensor in enumerate(tensors):
        scaled = tensor * prescale_factor if prescale_factor != 1.0 else tensor
        handles.append(_ops.allreduce_async(scaled, name=None if name is None else f"{name}.{i}", op=op))
    out = [_ops.synchronize(h) for h in handles]
    if postscale_factor != 1.0:
        for tensor in out:
            tensor.mul_(postscale_factor)
    return out


def _scaled_allreduce(tensor, op, name, prescale_factor, postscale_factor):
    return _scaled(_ops.allreduce, tensor, op, name, prescale_factor, postscale_factor)


def _scaled(collective, tensor, op, name, prescale_factor, postscale_factor):
    """collective(tensor * prescale_factor) * postscale_factor, multiplying only when not 1."""
    if prescale_factor != 1.0:
        tensor = tensor * prescale_factor
    out = collective(tensor, op=op, name=name)
    if postscale_factor != 1.0:
        out.mul_(postscale_factor)
    return out
