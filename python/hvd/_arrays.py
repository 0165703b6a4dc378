"""Framework-neutral array handling for hvd's collectives.

The compiled part takes any DLPack or buffer-protocol array without a copy; this module
decides what comes back. NumPy arrays give NumPy arrays, PyTorch tensors give PyTorch
tensors on the same device, without importing PyTorch unless a tensor came in. Anything
else (TensorFlow and JAX arrays, lists) is read through NumPy and gives NumPy.
"""

import numpy as np


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def as_input(x):
    """x as the extension takes it: contiguous (copied when not), detached from autograd."""
    if isinstance(x, np.ndarray):
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    if _is_torch(x):
        x = x.detach()
        return x if x.is_contiguous() else x.contiguous()
    return np.ascontiguousarray(np.asarray(x))


def as_inplace(x):
    """x for an in-place call: it must be writable and contiguous, never copied."""
    if _is_torch(x):
        return x.detach()
    return x


def empty_like(x):
    """An uninitialized dense array of x's type, shape, dtype and device."""
    if isinstance(x, np.ndarray):
        return np.empty(x.shape, dtype=x.dtype)
    import torch  # only reached with a torch tensor in hand

    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def from_gathered(data, counts, like):
    """The result of an allgather: the ranks' blocks of `like`'s trailing shape, stacked
    along the first dimension, as `like`'s type. data: uint8 NumPy array of every rank's
    bytes; counts: elements per rank."""
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

    out = torch.from_numpy(data).view(like.dtype).reshape(shape)
    return out if like.device.type == "cpu" else out.to(like.device)
