"""Framework-neutral array handling for hvd's collectives.

The compiled part takes any DLPack or buffer-protocol array without a copy; this module
decides what goes in and what comes back. NumPy arrays give NumPy arrays, PyTorch tensors
give PyTorch tensors on the same device, without importing PyTorch unless a tensor came
in. Anything else (TensorFlow and JAX arrays, lists) is read through NumPy and gives NumPy.

A torch tensor goes in as a DLPack capsule (torch.utils.dlpack.to_dlpack): a C call,
where tensor.__dlpack__() is Python code that costs more than a small allreduce (measured:
0.3 us against 2.8 us). The caller keeps the tensor itself alive while the runtime uses it.
"""

import sys

import numpy as np

from . import _hvd

_to_dlpack = None


def is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def dense(x):
    """x, a torch tensor, when it is dense; TypeError naming its layout if not (torch's own
    errors for a sparse one say nothing of hvd: "unsupported memory format option")."""
    if str(x.layout) != "torch.strided":
        raise TypeError(f"hvd: the tensor is {x.layout}, and hvd takes dense tensors: pass x.to_dense() "
                        "(hvd.torch.DistributedOptimizer gathers sparse gradients itself)")
    return x


def passed(x, process_set=0):
    """What the extension is given for x, which must be a NumPy array or a torch tensor, for a
    collective of process_set (its id): a CUDA tensor's set orders its GPU work after torch's."""
    if isinstance(x, np.ndarray):
        return x
    dense(x)
    global _to_dlpack
    if _to_dlpack is None:
        from torch.utils.dlpack import to_dlpack as _to_dlpack
    if x.is_cuda:
        # hvd runs GPU collectives on its own stream: the kernels that wrote x on torch's
        # stream must run first. hvd's stream waits for them on the GPU (an event, as in
        # Horovod); synchronizing torch's stream here held the CPU until every kernel queued
        # so far had run, at each gradient of a backward pass.
        import torch

        stream = torch.cuda.current_stream(x.device)
        if not _hvd.wait_gpu_stream(stream.cuda_stream, process_set):
            stream.synchronize()  # hvd has no GPU stream open yet (its first GPU collective)
    try:
        return _to_dlpack(x)
    except BufferError as error:  # a dtype DLPack has no code for (torch's float8 kinds), a meta tensor
        if str(x.dtype).removeprefix("torch.") in _supported().split(", "):
            raise TypeError(f"hvd: a tensor on device {x.device} cannot be handed over ({error}); hvd takes CPU "
                            "and CUDA tensors") from error
        raise TypeError(f"hvd: the tensor has dtype {x.dtype}, which hvd cannot reduce or move; supported: "
                        + _supported()) from error


# NumPy dtypes neither DLPack nor the buffer protocol can hand over as numbers: refused
# here, naming the dtype, as the extension names the numeric ones it lacks.
_NOT_NUMBERS = "OUSVMm"  # object, str, bytes, structured, datetime, timedelta


def _supported():
    return ", ".join(name for name, _ in _hvd.dtype_codes())


def check_numbers(x):
    """x, a NumPy array, when its elements are numbers; TypeError naming its dtype if not."""
    if x.dtype.kind in _NOT_NUMBERS:
        raise TypeError(f"hvd: the tensor has dtype {x.dtype}, which hvd cannot reduce or move; supported: "
                        + _supported())
    return x


def as_input(x):
    """x for an out-of-place call: a contiguous NumPy array in this machine's byte order or
    a contiguous torch tensor (copied when it was not, or not an array of either kind)."""
    if isinstance(x, np.ndarray):
        if not check_numbers(x).dtype.isnative:
            x = x.astype(x.dtype.newbyteorder("="))
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    if is_torch(x):
        return x if dense(x).is_contiguous() else x.contiguous()
    # np.ascontiguousarray would turn a scalar's 0-d array into shape (1,).
    x = check_numbers(np.asarray(x))
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def empty_like(x):
    """An uninitialized dense array of x's type, shape, dtype and device."""
    if isinstance(x, np.ndarray):
        return np.empty(x.shape, dtype=x.dtype)
    import torch  # only reached with a torch tensor in hand

    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def empty_shaped(like, shape):
    """An uninitialized dense array of `like`'s type, dtype and device, of this shape."""
    if isinstance(like, np.ndarray):
        return np.empty(shape, dtype=like.dtype)
    import torch

    return torch.empty(shape, dtype=like.dtype, device=like.device)


def from_gathered(data, counts, like):
    """The result of an allgather: the ranks' blocks of `like`'s trailing shape, stacked
    along the first dimension, as `like`'s type. data: every rank's bytes, a uint8 NumPy
    array, or a uint8 torch tensor on the GPU for a CUDA tensor's result (it stays there);
    counts: elements per rank."""
    trailing = tuple(like.shape[1:]) if len(like.shape) > 0 else ()
    per_row = int(np.prod(trailing)) if trailing else 1
    for rank, count in enumerate(counts):
        if per_row and count % per_row:
            from . import HvdUsageError

            raise HvdUsageError(
                f"allgather: rank {rank} gave {count} elements, not a whole number of rows of "
                f"shape {trailing}; every rank's tensor must have the same shape past the first dimension"
            )
    rows = sum(counts) // per_row if per_row else 0
    shape = (rows,) + trailing
    if isinstance(like, np.ndarray):
        return data.view(like.dtype).reshape(shape)
    import torch

    if data.shape[0] == 0:  # nothing came (every rank gave no rows): torch views no empty buffer as another dtype
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if isinstance(data, np.ndarray):
        data = torch.from_numpy(data)
    out = data.view(like.dtype).reshape(shape)
    return out if out.device == like.device else out.to(like.device)
