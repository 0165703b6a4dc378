"""hvd.torch: hvd for PyTorch programs, with Horovod's names (`import horovod.torch as hvd`
becomes `import hvd.torch as hvd`).

Collectives take and return torch tensors (CPU tensors through hvd's CPU backends; CUDA
tensors through the GPU path when this hvd has one). DistributedOptimizer averages
gradients during the backward pass; broadcast_parameters and broadcast_optimizer_state
start every rank from the same state; SyncBatchNorm normalizes with every rank's batch.
"""

from .. import (  # noqa: F401  the core API, re-exported
    Adasum,
    Average,
    HorovodInternalError,
    HvdError,
    HvdInvalidArgumentError,
    HvdPeerError,
    HvdTimeoutError,
    HvdUnavailableError,
    HvdUsageError,
    Max,
    ProcessSet,
    add_process_set,
    global_process_set,
    gpu_operations_backend,
    operations_backend,
    remove_process_set,
    set_gpu_stream,
    Min,
    Product,
    ReduceOp,
    Sum,
    allgather_async,
    allreduce_async,
    allreduce_async_,
    barrier,
    broadcast_,
    broadcast_async,
    broadcast_async_,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    gloo_built,
    gloo_enabled,
    init,
    is_homogeneous,
    is_initialized,
    join,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    poll,
    preemption_agreed,
    preemption_requested,
    rank,
    rocm_built,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
    synchronize,
)
import torch as _torch

from .. import _ops
from . import autograd as _autograd
from .compression import Compression
from .functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .optimizer import DistributedOptimizer
from .sync_batch_norm import SyncBatchNorm
from . import elastic  # noqa: E402  Horovod's hvd.elastic, on a fixed set of ranks


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=None):
    """A new tensor: tensor reduced across ranks (op: Average by default), optionally sent
    compressed and scaled before and after the reduction. Differentiable, as Horovod's:
    see autograd.py for the gradient."""
    compressed, ctx = compression.compress(tensor)
    op = _ops.reduce_op(op, average)
    if _autograd.wants_grad(compressed):
        out = _autograd.Allreduce.apply(compressed, op, name, prescale_factor, postscale_factor, process_set)
    else:
        out = _autograd._scaled_allreduce(compressed, op, name, prescale_factor, postscale_factor, process_set)
    return compression.decompress(out, ctx)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=None):
    """Horovod's: new tensors, each of tensors reduced across ranks (op: Average by default),
    submitted together so the engine fuses them; differentiable, as allreduce."""
    op = _ops.reduce_op(op, average)
    compressed = [compression.compress(t) for t in tensors]
    inputs = [c for c, _ in compressed]
    if any(_autograd.wants_grad(t) for t in inputs):
        reduced = _autograd.GroupedAllreduce.apply(op, name, prescale_factor, postscale_factor, process_set, *inputs)
    else:
        reduced = _autograd.grouped_allreduce(inputs, op, name, prescale_factor, postscale_factor, process_set)
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, compressed)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=None):
    """Horovod's in-place grouped allreduce: each tensor reduced in place, the group fused;
    returns tensors."""
    reduced = _autograd.grouped_allreduce(tensors, _ops.reduce_op(op, average), name, prescale_factor, postscale_factor,
                                          process_set)
    with _torch.no_grad():
        for tensor, result in zip(tensors, reduced):
            tensor.copy_(result)
    return tensors


def reducescatter(tensor, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
                  postscale_factor=1.0, process_set=None):
    """Horovod's: tensor (the same shape on every rank) reduced across ranks (op: Average by
    default), this rank getting its rows of the result (rows // size(), one more for each
    of the first rows % size() ranks). Differentiable with Horovod's gradient: every rank's
    output gradient gathered, times size() for Sum (see autograd.py)."""
    compressed, ctx = compression.compress(tensor)
    op = _ops.reduce_op(op, None)
    if _autograd.wants_grad(compressed):
        out = _autograd.Reducescatter.apply(compressed, op, name, prescale_factor, postscale_factor, process_set)
    else:
        out = _autograd._scaled_reducescatter(compressed, op, name, prescale_factor, postscale_factor, process_set)
    return compression.decompress(out, ctx)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=None):
    """Horovod's: each tensor reduce-scattered as reducescatter does it, every request
    submitted before any is waited for; differentiable, as reducescatter."""
    if any(_autograd.wants_grad(t) for t in tensors):
        return [reducescatter(t, name=None if name is None else f"{name}.{i}", compression=compression, op=op,
                              prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                              process_set=process_set)
                for i, t in enumerate(tensors)]
    compressed = [compression.compress(t) for t in tensors]
    handle = grouped_reducescatter_async([c for c, _ in compressed], name=name, op=op, prescale_factor=prescale_factor,
                                         postscale_factor=postscale_factor, process_set=process_set)
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(_ops.synchronize(handle), compressed)]


def grouped_reducescatter_async(tensors, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                                process_set=None):
    """Horovod's: starts grouped_reducescatter; synchronize(handle) returns the list."""
    op = _ops.reduce_op(op, None)
    handles = [
        _ops.reducescatter_async(_ops.scaled(t, prescale_factor), op=op,
                                 name=None if name is None else f"{name}.{i}", process_set=process_set)
        for i, t in enumerate(tensors)
    ]
    return _ops.remember_group(handles, lambda out: _postscaled(out, postscale_factor))


def alltoall(tensor, splits=None, name=None, process_set=None):
    """Horovod's: splits[d] of tensor's rows to rank d (None: an even split), the rows every
    rank sent this one back in rank order; with splits, (output, received_splits), as in
    Horovod. Differentiable: the gradient goes back the way the rows came."""
    if _autograd.wants_grad(tensor):
        out, received = _autograd.Alltoall.apply(tensor, splits, name, process_set)
        return out if splits is None else (out, received)
    return _ops.alltoall(tensor, splits=splits, name=name, process_set=process_set)


def alltoall_async(tensor, splits=None, name=None, process_set=None):
    """Horovod's: starts an alltoall; synchronize(handle) returns what alltoall returns."""
    return _ops.alltoall_async(tensor, splits=splits, name=name, process_set=process_set)


def sparse_allreduce_async(tensor, name, op, process_set=None):
    """Horovod's: a sparse COO tensor's indices and values allgathered from every rank
    (Horovod's sparse allreduce; what DistributedOptimizer does with sparse gradients).
    Returns a function, as Horovod's does, that waits and returns the sparse tensor of every
    rank's entries (duplicates sum when coalesced), values divided by size() for Average;
    process_set: gather from its ranks only."""
    from .optimizer import _SparseGather

    if op not in (_ops.Sum, _ops.Average):
        raise ValueError(f"hvd: sparse_allreduce_async sums or averages (hvd.Sum, hvd.Average), not op={op!r}")
    if not tensor.is_sparse:
        raise TypeError(f"hvd: sparse_allreduce_async takes a sparse COO tensor, not a {tensor.layout} one; "
                        "use allreduce_async for dense tensors")
    gather = _SparseGather(tensor, name, process_set)
    return lambda: gather.result(op)


def reducescatter_async(tensor, name=None, op=None, process_set=None):
    """Horovod's: starts a reducescatter; synchronize(handle) returns this rank's rows."""
    return _ops.reducescatter_async(tensor, op=op, name=name, process_set=process_set)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                            process_set=None):
    """Horovod's: starts grouped_allreduce; synchronize(handle) returns the new tensors."""
    op = _ops.reduce_op(op, average)
    handles = [
        _ops.allreduce_async(_ops.scaled(t, prescale_factor), op=op,
                             name=None if name is None else f"{name}.{i}", process_set=process_set)
        for i, t in enumerate(tensors)
    ]
    return _ops.remember_group(handles, lambda out: _postscaled(out, postscale_factor))


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                             process_set=None):
    """Horovod's: starts grouped_allreduce_ (in place); synchronize(handle) returns tensors."""
    op = _ops.reduce_op(op, average)
    for t in tensors:
        _ops.scale_in_place(t, prescale_factor)
    handles = [_ops.allreduce_async_(t, op=op, name=None if name is None else f"{name}.{i}", process_set=process_set)
               for i, t in enumerate(tensors)]
    return _ops.remember_group(handles, lambda out: _postscaled(out, postscale_factor))


def _postscaled(tensors, factor):
    return [_ops.scale_in_place(t, factor) for t in tensors]


def grouped_allgather(tensors, name=None, process_set=None):
    """Horovod's: each tensor gathered as allgather gathers it, every request submitted
    before any is waited for; differentiable, as allgather."""
    if any(_autograd.wants_grad(t) for t in tensors):
        return [allgather(t, name=None if name is None else f"{name}.{i}", process_set=process_set)
                for i, t in enumerate(tensors)]
    return _ops.synchronize(grouped_allgather_async(tensors, name=name, process_set=process_set))


def grouped_allgather_async(tensors, name=None, process_set=None):
    """Horovod's: starts grouped_allgather; synchronize(handle) returns the list."""
    handles = [_ops.allgather_async(t, name=None if name is None else f"{name}.{i}", process_set=process_set)
               for i, t in enumerate(tensors)]
    return _ops.remember_group(handles, list)


def allgather(tensor, name=None, process_set=None):
    """Every rank's tensor stacked along the first dimension, in rank order; differentiable."""
    if _autograd.wants_grad(tensor):
        return _autograd.Allgather.apply(tensor, name, process_set)
    return _ops.allgather(tensor, name=name, process_set=process_set)


def broadcast(tensor, root_rank, name=None, process_set=None):
    """A new tensor holding root_rank's tensor (a rank of the job, in a process set too);
    differentiable."""
    if _autograd.wants_grad(tensor):
        return _autograd.Broadcast.apply(tensor, root_rank, name, process_set)
    return _ops.broadcast(tensor, root_rank, name=name, process_set=process_set)


_ops.use_torch(_torch)
# hvd.allreduce_ itself, compiled, whose fast path takes dense CPU tensors once use_torch
# (above) has run: a Python function's frame here would cost a tenth of a small allreduce.
allreduce_ = _ops.allreduce_
