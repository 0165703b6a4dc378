"""Rank side of test_adasum.py: allreduce with op=hvd.Adasum against a NumPy Adasum tree
over every rank's inputs (each rank can rebuild them all): NumPy and torch, blocking, in
place and named async (fused, each tensor with its own coefficients), in a process set,
and what it refuses. Prints "ok" on success."""

import sys

import numpy as np
import torch

import hvd.torch as hvd
from adasum_reference import tree
from expect import expect_raises

hvd.init()
rank, size = hvd.rank(), hvd.size()
SHAPES = [(0,), (), (1,), (7,), (3, 5, 2), (1031,)]
TOLERANCE = {np.float16: 3e-3, np.float32: 1e-5, np.float64: 1e-12}


def inputs(r, shape, salt=0.0):
    """Rank r's tensor: neither parallel nor orthogonal to another rank's."""
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (np.sin(0.37 * i + 1.3 * r + salt) * (1 + 0.25 * r) + (0.5 if r % 3 == 0 else -0.2)).reshape(shape)


def expected(shape, dtype, salt=0.0, ranks=None):
    ranks = range(size) if ranks is None else ranks
    leaves = [inputs(r, shape, salt).astype(dtype).astype(np.float64).ravel() for r in ranks]
    return tree(leaves).reshape(shape)


def check(got, want, what, tolerance):
    got = got.double().numpy() if torch.is_tensor(got) else np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    assert np.allclose(got, want, rtol=tolerance, atol=tolerance), \
        f"{what}: got {got.ravel()[:6]}, want {want.ravel()[:6]}"


# Blocking, out of place and in place, every NumPy float type and shape.
for dtype in (np.float16, np.float32, np.float64):
    for shape in SHAPES:
        mine = inputs(rank, shape).astype(dtype)
        got = hvd.allreduce(mine, op=hvd.Adasum)
        assert got.dtype == dtype, f"{dtype.__name__}: result of type {got.dtype}"
        check(got, expected(shape, dtype), f"{dtype.__name__} {shape}", TOLERANCE[dtype])
        hvd.allreduce_(mine, op=hvd.Adasum)
        check(mine, expected(shape, dtype), f"{dtype.__name__} {shape} in place", TOLERANCE[dtype])

# torch tensors, bfloat16 included (checked against the float32 tree, to bfloat16's precision).
for dtype, tolerance in ((torch.float32, 1e-5), (torch.float64, 1e-12), (torch.bfloat16, 3e-2)):
    mine = torch.from_numpy(inputs(rank, (64,))).to(dtype)
    got = hvd.allreduce(mine, op=hvd.Adasum)
    assert got.dtype == dtype
    check(got, expected((64,), np.float32 if dtype == torch.bfloat16 else np.float64), f"torch {dtype}", tolerance)

# Named async calls submitted together, fused by the engine: each tensor keeps its own
# coefficients, and every rank gets the same bits.
lengths = [5, 300, 1, 64, 17]
arrays = [inputs(rank, (n,), salt=k).astype(np.float32) for k, n in enumerate(lengths)]
handles = [hvd.allreduce_async_(a, name=f"adasum.{k}", op=hvd.Adasum) for k, a in enumerate(arrays)]
for k, (n, h) in enumerate(zip(lengths, handles)):
    check(hvd.synchronize(h), expected((n,), np.float32, salt=k), f"fused tensor {k}", 1e-5)
gathered = hvd.allgather(torch.from_numpy(np.concatenate(arrays))[None]).numpy()
assert all(np.array_equal(gathered[0], row) for row in gathered), "ranks differ in the fused results' bits"

# A process set of all ranks but the last.
if size > 2:
    first = hvd.add_process_set(list(range(size - 1)))
    if first.included():
        got = hvd.allreduce(inputs(rank, (40,)), op=hvd.Adasum, process_set=first)
        check(got, expected((40,), np.float64, ranks=range(size - 1)), "process set", 1e-12)
    hvd.remove_process_set(first)

# A rank that joined stands in with zeros: its leaf drops out of the tree (Adasum of a
# tensor and zeros is the tensor).
if size > 2:
    if rank == 1:
        assert hvd.join() in range(size)
    else:
        got = hvd.allreduce(inputs(rank, (9,)), op=hvd.Adasum, name="beside.joined")
        leaves = [np.zeros(9) if r == 1 else inputs(r, (9,)) for r in range(size)]
        check(got, tree(leaves), "beside a joined rank", 1e-12)
        hvd.join()

# What Adasum does not take: integers, and any collective but allreduce.
expect_raises(hvd.HvdInvalidArgumentError, "not int32", lambda: hvd.allreduce(np.ones(3, np.int32), op=hvd.Adasum))
expect_raises(hvd.HvdInvalidArgumentError, "only an allreduce takes Adasum",
              lambda: hvd.reducescatter(np.ones((size, 2), np.float32), op=hvd.Adasum))
# The refusals left the runtime working.
assert hvd.allreduce(np.ones(2, np.float32), op=hvd.Sum).tolist() == [size, size]

hvd.barrier()
print("ok")
sys.stdout.flush()
