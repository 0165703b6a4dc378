"""The collectives with Horovod's names and semantics, for any array type (see _arrays).

Blocking calls without a name are matched across ranks by the order each rank makes them;
named and async calls go through the engine, which matches them by name in any order and
fuses small allreduces. Async calls return an int handle; synchronize(handle) returns the
result. The arrays stay referenced here until then, so the runtime never writes into
memory Python has freed.
"""

import itertools
import pickle
import threading

import numpy as np

from . import _arrays, _hvd
from ._hvd import ReduceOp
from ._process_sets import set_id as _set

Average = ReduceOp.Average
Sum = ReduceOp.Sum
Min = ReduceOp.Min
Max = ReduceOp.Max
Product = ReduceOp.Product
# Horovod's Adasum: whole floating-point tensors combined by their dot products and norms
# (docs/python.md); allreduce only.
Adasum = ReduceOp.Adasum

# handle -> (kind, result maker, the arrays the runtime is using)
_pending = {}
_pending_lock = threading.Lock()


def _remember(handle, kind, finish, keep):
    with _pending_lock:
        _pending[handle] = (kind, finish, keep)
    return handle


# A group's handle (Horovod's grouped_*_async) is negative, never the runtime's: it stands
# for its members' handles, and synchronize hands finish the list of their results.
_group_ids = itertools.count(-1, -1)


def remember_group(handles, finish):
    return _remember(next(_group_ids), "group", finish, tuple(handles))


# The fast path for in-place calls on torch CPU tensors, the calls a training step makes by
# the hundred: the extension reads the tensor's address, count and dtype itself (C calls
# on the tensor, no DLPack capsule, no Python frame between). Enabled by hvd.torch
# (use_torch), since it needs torch's types. A tensor it does not take (CUDA,
# requires_grad, strided, a dtype hvd lacks, a Parameter) or an op it cannot read is left
# to the general path, which also raises the errors.
def use_torch(torch):
    # torch.uint16 is new in torch 2.3: older ones have no tensor of that dtype to take.
    _hvd.use_torch(torch.Tensor, [(getattr(torch, name), code) for name, code in _hvd.dtype_codes()
                                  if hasattr(torch, name)])


def reduce_op(op, average):
    """The ReduceOp a call asks for: op, or Horovod's deprecated average= (True: Average,
    False: Sum); Average when neither is given. hvd.torch and hvd.tensorflow use it too."""
    if average is not None:  # Horovod's deprecated spelling
        if op is not None:
            raise ValueError("hvd: give op or average, not both")
        return Average if average else Sum
    if op is None:
        return Average
    return op if type(op) is ReduceOp else ReduceOp(op)


def _name(name):
    """name as the extension takes it ("" for none)."""
    if name is None:
        return ""
    if not isinstance(name, str):
        raise TypeError(f"hvd: name must be a str, not {type(name).__name__}")
    return name


def _root(root_rank):
    if isinstance(root_rank, bool) or not isinstance(root_rank, (int, np.integer)):
        raise TypeError(f"hvd: root_rank must be an int, not {type(root_rank).__name__}")
    return int(root_rank)


def _inplace(tensor):
    """tensor for an in-place call: a NumPy array or torch tensor, never copied."""
    if isinstance(tensor, np.ndarray):
        _arrays.check_numbers(tensor)
        if not tensor.flags.writeable:
            raise ValueError(f"hvd: an in-place call needs a writable array; this {tensor.dtype} array is read-only "
                             "(pass a copy, or use the out-of-place call)")
        if not tensor.dtype.isnative:
            raise TypeError(f"hvd: the array's byte order is not this machine's (dtype '{tensor.dtype.str}'); in place "
                            "hvd takes native order: pass x.astype(x.dtype.newbyteorder('=')), or use the "
                            "out-of-place call, which converts")
        return tensor
    if _arrays.is_torch(tensor):
        return tensor
    raise TypeError(f"hvd: an in-place call needs a NumPy array or a torch tensor, not {type(tensor).__name__}")


def allreduce(tensor, average=None, name=None, op=None, process_set=None):
    """Reduces tensor across ranks (of process_set: the whole job by default) into a new
    array of the same type (op: Average by default)."""
    if name is not None:
        return synchronize(allreduce_async(tensor, average=average, name=name, op=op, process_set=process_set))
    x = _arrays.as_input(tensor)
    out = _arrays.empty_like(x)
    in_set = _set(process_set)
    _hvd.allreduce(_arrays.passed(x, in_set), _arrays.passed(out, in_set), reduce_op(op, average), in_set)
    return out


def scale_in_place(array, factor):
    """array *= factor, for Horovod's prescale_factor and postscale_factor (a NumPy array or a
    torch tensor, outside autograd as Horovod scales inside its op), by Horovod's rule: the
    array keeps its dtype; integers are multiplied in float64 and truncated toward zero,
    floating-point types in their own precision (the factor rounded to it)."""
    if factor == 1.0:
        return array
    if hasattr(array, "mul_"):
        import torch

        with torch.no_grad():
            if array.is_floating_point() or array.is_complex():
                array.mul_(factor)
            else:
                array.copy_(array.to(torch.float64).mul_(factor))
    else:
        np.multiply(array, factor, out=array, casting="unsafe")
    return array


def scaled(array, factor):
    """A scaled copy of array (scale_in_place's rule), or array itself when factor is 1."""
    if factor == 1.0:
        return array
    copy = array.detach().clone() if hasattr(array, "detach") else np.array(array, copy=True)
    return scale_in_place(copy, factor)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=None):
    """allreduce_'s general path: what the compiled entry's fast path does not take (named
    calls, average=, the scale factors, process_set=, other array types, anything it cannot
    read), which also raises the errors. Named allreduce_ so that Python's own argument
    errors name the call made. Horovod's arguments, in its order."""
    if name is not None or prescale_factor != 1.0 or postscale_factor != 1.0:
        return synchronize(allreduce_async_(tensor, average=average, name=name, op=op, prescale_factor=prescale_factor,
                                            postscale_factor=postscale_factor, process_set=process_set))
    in_set = _set(process_set)
    _hvd.allreduce_inplace(_arrays.passed(_inplace(tensor), in_set), reduce_op(op, average), in_set)
    return tensor


# allreduce_(tensor, average=None, name=None, op=None, ...): reduces tensor across ranks in
# place and returns it. Compiled (python/src/inplace_allreduce.h): a NumPy array or a dense
# CPU torch tensor goes to the runtime by address, without a Python frame; the rest goes
# to the general path above.
_allreduce_general_ = allreduce_
_hvd.use_numpy(np.ndarray)
_hvd.set_general_allreduce_(_allreduce_general_)
allreduce_ = _hvd.allreduce_


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=None):
    """Starts an allreduce into a new array; synchronize(handle) returns it. Horovod's
    arguments, in its order: the input is multiplied by prescale_factor before the reduction
    (in a copy), the result by postscale_factor after it."""
    x = scaled(_arrays.as_input(tensor), prescale_factor)
    out = _arrays.empty_like(x)
    in_set = _set(process_set)
    handle = _hvd.allreduce_async(_name(name), _arrays.passed(x, in_set), _arrays.passed(out, in_set),
                                  reduce_op(op, average), in_set)

    def finish():
        scale_in_place(out, postscale_factor)
        return out

    return _remember(handle, "plain", finish, (x, out))


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=None):
    """Starts an in-place allreduce; synchronize(handle) returns the tensor, multiplied by
    prescale_factor before the reduction and by postscale_factor after it (Horovod's)."""
    if prescale_factor != 1.0:
        scale_in_place(_inplace(tensor), prescale_factor)  # checked first: a refused tensor stays as it was

    def finish():
        scale_in_place(tensor, postscale_factor)
        return tensor

    in_set = _set(process_set)
    fast = average is None and in_set == 0  # the torch fast path runs in the whole job only
    handle = _hvd.allreduce_async_inplace_torch(_name(name), tensor, op) if fast else None
    if handle is not None:
        return _remember(handle, "plain", finish, (tensor,))
    handle = _hvd.allreduce_async_inplace(_name(name), _arrays.passed(_inplace(tensor), in_set), reduce_op(op, average),
                                          in_set)
    return _remember(handle, "plain", finish, (tensor,))


def broadcast(tensor, root_rank, name=None, process_set=None):
    """root_rank's tensor on every rank (of process_set; root_rank is a rank of the job, as
    in Horovod), as a new array."""
    x = _arrays.as_input(tensor)
    out = _arrays.empty_like(x)
    out[...] = x
    return broadcast_(out, root_rank, name=name, process_set=process_set)


def broadcast_(tensor, root_rank, name=None, process_set=None):
    """Overwrites tensor with root_rank's on every rank and returns it."""
    if name is not None:
        return synchronize(broadcast_async_(tensor, root_rank, name=name, process_set=process_set))
    in_set = _set(process_set)
    _hvd.broadcast(_arrays.passed(_inplace(tensor), in_set), _root(root_rank), in_set)
    return tensor


def broadcast_async(tensor, root_rank, name=None, process_set=None):
    x = _arrays.as_input(tensor)
    out = _arrays.empty_like(x)
    out[...] = x
    return broadcast_async_(out, root_rank, name=name, process_set=process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=None):
    in_set = _set(process_set)
    handle = _hvd.broadcast_async(_name(name), _arrays.passed(_inplace(tensor), in_set), _root(root_rank), in_set)
    return _remember(handle, "plain", lambda: tensor, (tensor,))


def allgather(tensor, name=None, process_set=None):
    """Every rank's tensor stacked along the first dimension, in rank order (of process_set's
    ranks). The first dimensions may differ between ranks; the rest of the shape must not."""
    x = _arrays.as_input(tensor)
    if name is None:
        in_set = _set(process_set)
        data, counts = _hvd.allgather(_arrays.passed(x, in_set), in_set)
        return _arrays.from_gathered(data, counts, x)
    return synchronize(allgather_async(x, name=name, process_set=process_set))


def allgather_async(tensor, name=None, process_set=None):
    x = _arrays.as_input(tensor)
    in_set = _set(process_set)
    handle = _hvd.allgather_async(_name(name), _arrays.passed(x, in_set), in_set)
    return _remember(handle, "gather", x, (x,))


def _on_host(x):
    return not _arrays.is_torch(x) or not x.is_cuda


def reducescatter(tensor, op=None, name=None, process_set=None):
    """Horovod's: tensor (the same shape on every rank) reduced across ranks (op: Average by
    default); this rank gets its rows of the result along the first dimension, rows //
    size() of them, one more for each of the first rows % size() ranks."""
    if name is not None or not _on_host(tensor):
        return synchronize(reducescatter_async(tensor, op=op, name=name, process_set=process_set))
    # Unnamed on the host: the blocking call, which drives the collective from this thread
    # (through the async pair a request waited on the engine's thread: 34 us against 3-6).
    in_set = _set(process_set)
    x, out = _scatter_arrays(tensor, in_set)
    _hvd.reducescatter(_arrays.passed(x, in_set), _arrays.passed(out, in_set), reduce_op(op, None), in_set)
    return out


def _scatter_arrays(tensor, in_set):
    """reducescatter's input and this rank's output, allocated."""
    x = _arrays.as_input(tensor)
    if len(x.shape) == 0:
        raise ValueError("hvd: reducescatter splits the tensor's first dimension, and a 0-d tensor has none")
    return x, _arrays.empty_shaped(x, (_hvd.reducescatter_rows(x.shape[0], in_set),) + tuple(x.shape[1:]))


def reducescatter_async(tensor, op=None, name=None, process_set=None):
    """Starts a reducescatter; synchronize(handle) returns this rank's rows."""
    in_set = _set(process_set)
    x, out = _scatter_arrays(tensor, in_set)
    handle = _hvd.reducescatter_async(_name(name), _arrays.passed(x, in_set), _arrays.passed(out, in_set),
                                      reduce_op(op, None), in_set)
    return _remember(handle, "plain", lambda: out, (x, out))


def alltoall(tensor, splits=None, name=None, process_set=None):
    """Horovod's: sends splits[d] of tensor's rows (first dimension) to rank d, in order
    (splits None: rows // size() to each, which must divide evenly), and returns the rows
    every rank sent this one, in rank order; with splits, (output, received_splits)."""
    out, received = alltoall_with_splits(tensor, splits, name=name, process_set=process_set)
    return out if splits is None else (out, received)


def alltoall_with_splits(tensor, splits=None, name=None, process_set=None):
    """alltoall's rows and the rows each rank sent, with splits or without (what autograd's
    backward sends back)."""
    if name is not None or not _on_host(tensor):
        handle = _alltoall_start(tensor, splits, name, process_set, with_splits=True)
        return synchronize(handle)
    x, rows = _alltoall_arguments(tensor, splits)
    in_set = _set(process_set)
    return _alltoall_result(_hvd.alltoall(_arrays.passed(x, in_set), rows, in_set), x, True)


def _alltoall_arguments(tensor, splits):
    """alltoall's input and its rows to each rank (empty: an even split)."""
    x = _arrays.as_input(tensor)
    if len(x.shape) == 0:
        raise ValueError("hvd: alltoall splits the tensor's first dimension, and a 0-d tensor has none")
    rows = []
    if splits is not None:
        values = splits.detach().cpu().numpy() if _arrays.is_torch(splits) else np.asarray(splits)
        if values.ndim != 1 or values.dtype.kind not in "iu" or (values < 0).any():
            raise ValueError(f"hvd: alltoall's splits must be whole numbers of rows, one per rank, not {splits!r}")
        rows = [int(v) for v in values]
    return x, rows


def _alltoall_result(gathered, like, with_splits):
    """The rows received, shaped like `like`'s, and with splits the rows each rank sent."""
    out = _arrays.from_gathered(*gathered, like)
    if not with_splits:
        return out
    per_row = int(np.prod(like.shape[1:])) if len(like.shape) > 1 else 1
    received = np.array([c // per_row if per_row else 0 for c in gathered[1]], dtype=np.int32)
    if _arrays.is_torch(like):
        import torch

        received = torch.from_numpy(received)
    return out, received


def alltoall_async(tensor, splits=None, name=None, process_set=None):
    """Starts an alltoall; synchronize(handle) returns what alltoall returns."""
    return _alltoall_start(tensor, splits, name, process_set, with_splits=splits is not None)


def _alltoall_start(tensor, splits, name, process_set, with_splits):
    x, rows = _alltoall_arguments(tensor, splits)
    in_set = _set(process_set)
    handle = _hvd.alltoall_async(_name(name), _arrays.passed(x, in_set), rows, in_set)
    return _remember(handle, "alltoall", (x, with_splits), (x,))


def poll(handle):
    """True once the async request has finished (synchronize will not block)."""
    with _pending_lock:
        entry = _pending.get(handle)
    if entry is not None and entry[0] == "group":
        return all(poll(member) for member in entry[2])
    return _hvd.poll(handle)


# How long synchronize waits in the runtime at a time before it is back in Python, where a
# Ctrl-C raises KeyboardInterrupt (a wait of its own would hold it until the request ended,
# which for a hung job is never).
_WAIT_MS = 100


def synchronize(handle):
    """Waits for an async request and returns its result; raises its failure."""
    with _pending_lock:
        entry = _pending.get(handle)
    if entry is None:
        from . import HvdUsageError

        raise HvdUsageError(f"hvd: handle {handle} is not pending (unknown, or already synchronized)")
    kind, finish, _keep = entry
    if kind == "group":
        return _synchronize_group(handle, finish, _keep)
    # Interrupted (KeyboardInterrupt between waits), the request stays pending and its
    # arrays stay referenced here, since the runtime may still write into them.
    try:
        if kind in ("gather", "alltoall"):
            while (gathered := _hvd.synchronize_allgather_for(handle, _WAIT_MS)) is None:
                pass
        else:
            while not _hvd.synchronize_for(handle, _WAIT_MS):
                pass
    except _hvd.HvdError:  # the request ended, failing: the runtime released it
        _forget(handle)
        raise
    _forget(handle)
    if kind == "gather":
        return _arrays.from_gathered(*gathered, finish)
    if kind == "alltoall":
        return _alltoall_result(gathered, *finish)
    return finish()


def _synchronize_group(handle, finish, members):
    """Every member's result, in order, handed to finish. A member that fails fails the group,
    after the rest were waited for (each holds arrays the runtime may still write)."""
    results, failure = [], None
    for member in members:
        try:
            results.append(synchronize(member))
        except _hvd.HvdError as e:
            failure = failure or e
    _forget(handle)
    if failure is not None:
        raise failure
    return finish(results)


def _forget(handle):
    with _pending_lock:
        _pending.pop(handle, None)


def barrier(process_set=None):
    """Returns once every rank (of process_set) has called it."""
    _hvd.barrier(_set(process_set))


def join(device=-1):
    """Horovod's join: this rank has run out of data. Returns once every rank joined, with
    the rank that joined last. Meanwhile this rank takes part in the collectives the others
    still run without changing their results (allreduce: the reduction's identity, so an
    average still divides by size(), as Horovod's does; allgather: no rows). A broadcast
    from a joined rank, and a GPU tensor while any rank has joined, raise on every rank.
    `device` is Horovod's GPU for its zero tensors; accepted, and unused here."""
    if not isinstance(device, int) or isinstance(device, bool):
        raise TypeError(f"join: device must be an int (a GPU's index, or -1), not {device!r}")
    return _hvd.join()


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """root_rank's picklable obj on every rank (of process_set)."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8) if _hvd.rank() == root_rank else None
    length = np.array([payload.size if payload is not None else 0], dtype=np.int64)
    prefix = f"{name}." if name else None
    broadcast_(length, root_rank, name=prefix and prefix + "length", process_set=process_set)
    buffer = payload.copy() if payload is not None else np.empty(int(length[0]), dtype=np.uint8)
    broadcast_(buffer, root_rank, name=prefix and prefix + "data", process_set=process_set)
    return obj if _hvd.rank() == root_rank else pickle.loads(buffer.tobytes())


def allgather_object(obj, name=None, process_set=None):
    """A list of every rank's (of process_set's) picklable obj, in rank order."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    in_set = _set(process_set)
    data, counts = _hvd.allgather(payload, in_set) if name is None else _gather_named(payload, name, in_set)
    objects, start = [], 0
    for count in counts:
        objects.append(pickle.loads(data[start : start + count].tobytes()))
        start += count
    return objects


def _gather_named(payload, name, in_set):
    # payload stays referenced by the caller until the gather is done
    return _hvd.synchronize_allgather(_hvd.allgather_async(name, payload, in_set))
