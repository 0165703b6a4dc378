"""Rank side of test_collectives.py: every collective of the hvd package, checked against
a NumPy reference computed from every rank's inputs (each rank can rebuild them all)."""

import sys

import numpy as np
import torch

import hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
assert hvd.is_homogeneous(), "every rank on one host is homogeneous"  # uneven hosts: tests/ssh, tests/slurm

OPS = [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]
NUMPY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64]
TORCH_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16,
                torch.uint16, torch.int32, torch.int64]
SHAPES = [(0,), (), (1,), (7,), (3, 5, 2), (1031,)]


def values(r, shape):
    """Rank r's input: small whole numbers, exact in every dtype, products fit int8 on 4 ranks."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 7 + r * 3) % 3 + 1).reshape(shape)


def expected(op, shape, integer):
    stack = np.stack([values(r, shape).astype(np.float64) for r in range(size)])
    if op == hvd.Sum:
        return stack.sum(0)
    if op == hvd.Average:
        s = stack.sum(0)
        return np.trunc(s / size) if integer else s / size
    if op == hvd.Min:
        return stack.min(0)
    if op == hvd.Max:
        return stack.max(0)
    return stack.prod(0)


def check(got, want, what, tolerance):
    got = np.asarray(got, dtype=np.float64) if not torch.is_tensor(got) else got.double().numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    assert np.allclose(got, want, rtol=tolerance, atol=0), f"{what}: got {got.ravel()[:8]}, want {want.ravel()[:8]}"


def through_fast_path(tensor, *args, **kwargs):
    """hvd.allreduce_(tensor, *args, **kwargs), and whether the compiled entry's fast path took it:
    its general path (the package's _allreduce_general_), swapped for one that counts its
    calls, was not called."""
    calls = []

    def general(*args, **kw):
        calls.append(args)
        return hvd._ops._allreduce_general_(*args, **kw)

    hvd._hvd.set_general_allreduce_(general)
    try:
        result = hvd.allreduce_(tensor, *args, **kwargs)
    finally:
        hvd._hvd.set_general_allreduce_(hvd._ops._allreduce_general_)
    return result, not calls


def declined(tensor, *args, **kwargs):
    """True when the fast path left hvd.allreduce_(tensor, *args, **kwargs) to the general path
    (here one that does nothing, so no rank reduces anything)."""
    calls = []
    hvd._hvd.set_general_allreduce_(lambda *args, **kw: calls.append(args))
    try:
        hvd.allreduce_(tensor, *args, **kwargs)
    finally:
        hvd._hvd.set_general_allreduce_(hvd._ops._allreduce_general_)
    return len(calls) == 1


def tolerance(dtype):
    return {np.float16: 1e-3, np.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-12)


# Every NumPy dtype and op, out of place and in place, blocking and named async.
for dtype in NUMPY_DTYPES:
    integer = np.issubdtype(dtype, np.integer)
    for op in OPS:
        for shape in SHAPES:
            what = f"numpy {np.dtype(dtype).name} {op.name} {shape}"
            x = values(rank, shape).astype(dtype)
            before = x.copy()
            out = hvd.allreduce(x, op=op)
            assert isinstance(out, np.ndarray) and out.dtype == x.dtype, what
            assert np.array_equal(x, before), f"{what}: out-of-place allreduce changed its input"
            want = expected(op, shape, integer)
            check(out, want, what, tolerance(dtype))
            inplace = x.copy()
            got, fast = through_fast_path(inplace, op=op)
            assert got is inplace and fast, f"{what}: in place, not taken by the fast path"
            check(inplace, want, what + " in place", tolerance(dtype))
            named = hvd.synchronize(hvd.allreduce_async(x, op=op, name=what))
            check(named, want, what + " async", tolerance(dtype))

# reducescatter (Horovod's): this rank's rows of the reduction, rows // size each and one
# more for each of the first rows % size ranks, for every dtype and op; shapes with a first
# dimension, more ranks than rows among them.
for dtype in NUMPY_DTYPES:
    integer = np.issubdtype(dtype, np.integer)
    for op in OPS:
        for shape in [s for s in SHAPES if len(s) > 0] + [(2, 3)]:
            what = f"numpy reducescatter {np.dtype(dtype).name} {op.name} {shape}"
            rows = shape[0]
            first = rank * (rows // size) + min(rank, rows % size)
            mine = rows // size + (1 if rank < rows % size else 0)
            want = expected(op, shape, integer)[first:first + mine]
            check(hvd.reducescatter(values(rank, shape).astype(dtype), op=op), want, what, tolerance(dtype))
            named = hvd.synchronize(hvd.reducescatter_async(values(rank, shape).astype(dtype), op=op, name=what))
            check(named, want, what + " async", tolerance(dtype))
# alltoall (Horovod's): rank k sends rank d (k + d) % 3 + 1 rows of shape (2,), each row
# 100 * k + 10 * d + its index; every dtype; without splits an even split of 2 rows each.
for dtype in NUMPY_DTYPES:
    sends = [(rank + d) % 3 + 1 for d in range(size)]
    rows = [np.full((2,), 100 * rank + 10 * d + i) for d in range(size) for i in range(sends[d])]
    x = np.stack(rows).astype(np.float64).astype(dtype) if dtype not in (np.int8, np.uint8) else np.stack(rows) % 100
    x = x.astype(dtype)
    out, received = hvd.alltoall(x, splits=sends, name=f"a2a {np.dtype(dtype).name}")
    want = [np.full((2,), 100 * k + 10 * rank + i) for k in range(size) for i in range((k + rank) % 3 + 1)]
    want = np.stack(want) % 100 if dtype in (np.int8, np.uint8) else np.stack(want)
    assert received.tolist() == [(k + rank) % 3 + 1 for k in range(size)], received
    check(out, want.astype(np.float64), f"numpy alltoall {np.dtype(dtype).name}", tolerance(dtype))
even = hvd.alltoall(np.arange(2 * size, dtype=np.float32) + 100 * rank)
check(even, np.array([100 * k + 2 * rank + i for k in range(size) for i in range(2)], dtype=np.float64),
      "numpy alltoall, even", 0)
for bad, says in (([1] * (size + 1), "splits give"), ([-1] + [0] * (size - 1), "whole numbers of rows")):
    try:
        hvd.alltoall(np.zeros((size, 2), np.float32), splits=bad)
        raise AssertionError(f"alltoall took splits {bad}")
    except (hvd.HvdInvalidArgumentError, ValueError) as e:
        assert says in str(e), e

try:
    hvd.reducescatter(np.float32(1.0))
    raise AssertionError("a 0-d tensor was scattered")
except ValueError as e:
    assert "first dimension" in str(e), e

# NumPy arrays the in-place fast path leaves to the general one, which reduces or refuses
# them as before: a strided view, a read-only array, another byte order, a dtype hvd lacks,
# a name or average=, an op given as something else than hvd.ReduceOp.
ones = np.ones((3, 4), dtype=np.float32)
assert declined(ones[:, 1], op=hvd.Sum) and declined(np.ones(3, dtype=">f4"), op=hvd.Sum)
frozen = np.ones(3, dtype=np.float32)
frozen.flags.writeable = False
assert declined(frozen, op=hvd.Sum) and declined(np.ones(3, dtype=np.complex64), op=hvd.Sum)
assert declined(np.ones(3), op=hvd.Sum, name="named") and declined(np.ones(3), average=False)
assert declined(np.ones(3), op="Sum") and declined(np.ones(3), hvd.Sum) and declined(np.ones(3), tensr=1)
x = np.full(3, float(rank))
got, fast = through_fast_path(x)
assert got is x and fast, "numpy, default op: not taken by the fast path"
check(x, np.full(3, (size - 1) / 2), "numpy by address, default op (Average, as Horovod's)", 1e-12)
x = np.full(3, float(rank))
assert through_fast_path(x, None, None, hvd.Max)[1] and through_fast_path(x, op=hvd.Min, name=None)[1]
check(x, np.full(3, size - 1.0), "numpy by address, positional arguments", 0)
try:
    hvd.allreduce_(ones[:, 1], op=hvd.Sum)
    raise AssertionError("a strided view was reduced in place")
except ValueError as error:
    assert "not contiguous" in str(error), error

# PyTorch tensors, bfloat16 included; results are tensors of the same dtype.
for dtype in TORCH_DTYPES:
    integer = not dtype.is_floating_point
    for op in OPS:
        shape = (4, 3)
        what = f"torch {dtype} {op.name}"
        t = torch.from_numpy(values(rank, shape)).to(dtype)
        out = hvd.allreduce(t, op=op)
        assert torch.is_tensor(out) and out.dtype == dtype and out.shape == t.shape, what
        check(out, expected(op, shape, integer), what, tolerance(dtype))
        handle = hvd.allreduce_async_(t, op=op, name=what)
        while not hvd.poll(handle):
            pass
        assert hvd.synchronize(handle) is t
        check(t, expected(op, shape, integer), what + " in place async", tolerance(dtype))

# The same in place once hvd.torch is imported: dense CPU tensors then go in by address
# (the extension reads their fields), every dtype and shape, blocking and named async,
# through the fast path itself and through hvd.torch's and hvd's functions. Tensors the
# fast path leaves to the general one (a Parameter, a strided view, one that requires grad,
# an op it cannot read) are refused by it with nothing done, and still reduce.
import hvd.torch  # noqa: E402

for dtype in TORCH_DTYPES:
    integer = not dtype.is_floating_point
    for op in OPS:
        for shape in SHAPES:
            what = f"torch {dtype} {op.name} {shape} by address"
            t = torch.from_numpy(values(rank, shape)).to(dtype)
            got, fast = through_fast_path(t, op=op)
            assert got is t and fast, f"{what}: not taken by the fast path"
            check(t, expected(op, shape, integer), what, tolerance(dtype))
            t = torch.from_numpy(values(rank, shape)).to(dtype)
            assert hvd.torch.allreduce_(t, op=op) is t
            check(t, expected(op, shape, integer), what + " through hvd.torch", tolerance(dtype))
            t = torch.from_numpy(values(rank, shape)).to(dtype)
            handle = hvd._hvd.allreduce_async_inplace_torch(what, t, op)
            assert handle is not None, f"{what} async: not taken by the fast path"
            hvd._hvd.synchronize(handle)
            check(t, expected(op, shape, integer), what + " async", tolerance(dtype))
            t = torch.from_numpy(values(rank, shape)).to(dtype)
            assert hvd.synchronize(hvd.allreduce_async_(t, op=op, name=what + " via hvd")) is t
            check(t, expected(op, shape, integer), what + " async through hvd", tolerance(dtype))
t = torch.full((2, 3), float(rank))
assert through_fast_path(t)[1]  # no op: Average, as Horovod's default
check(t, np.full((2, 3), (size - 1) / 2), "torch by address, default op", 1e-6)
p = torch.nn.Parameter(torch.ones(2, 3), requires_grad=False)
assert declined(p, op=hvd.Sum)
assert hvd._hvd.allreduce_async_inplace_torch("a Parameter", p, hvd.Sum) is None
check(hvd.allreduce_(p, op=hvd.Sum), np.full((2, 3), size), "a Parameter in place", 0)
check(hvd.torch.allreduce_(p, op=hvd.Sum), np.full((2, 3), size * size), "a Parameter through hvd.torch", 0)
column = torch.ones(3, 4)[:, 1]
assert declined(column, op=hvd.Sum)
check(hvd.allreduce(column, op=hvd.Sum), np.full((3,), size), "a strided view", 0)
cells = torch.zeros(3, 4)
cell = cells[1:2, 2]  # one element inside a bigger tensor: the fast path skips is_contiguous for it
cell.fill_(rank + 1.0)
got, fast = through_fast_path(cell, op=hvd.Sum)
assert got is cell and fast, "a one-element view: not taken by the fast path"
want = np.zeros((3, 4))
want[1, 2] = size * (size + 1) / 2
check(cells, want, "a one-element view, its neighbours untouched", 0)
assert declined(torch.ones(3, requires_grad=True), op=hvd.Sum) and declined(torch.ones(3), op="Sum")
assert declined(torch.ones(3), op=hvd.Sum, name="named") and declined(torch.ones(3, dtype=torch.complex64), op=hvd.Sum)
assert hvd.torch.allreduce_ is hvd.allreduce_
with_average = torch.ones(3)
assert hvd.torch.allreduce_(with_average, average=False) is with_average  # Horovod's old spelling: Sum
check(with_average, np.full((3,), size), "average=False through hvd.torch", 0)
named = torch.ones(3)
assert hvd.torch.allreduce_(named, name="named through hvd.torch", op=hvd.Max) is named
check(named, np.full((3,), 1), "named through hvd.torch", 0)

# A tensor that requires grad and a non-contiguous one are read as they are (copied
# for the out-of-place call, said in docs/python.md); the inputs stay untouched.
w = torch.ones(3, 4, requires_grad=True)
check(hvd.allreduce(w, op=hvd.Sum), np.full((3, 4), size), "requires_grad", 0)
strided = torch.arange(12.0).reshape(3, 4).t()
check(hvd.allreduce(strided, op=hvd.Max), strided.numpy(), "transposed input", 0)
assert type(hvd.allreduce([1.0, 2.0], op=hvd.Sum)) is np.ndarray
# A scalar stays one: np.ascontiguousarray once made it shape (1,).
for scalar in (2.0, np.float32(2.0), np.array(2.0)):
    check(hvd.allreduce(scalar, op=hvd.Sum), np.array(2.0 * size), f"the scalar {scalar!r}", 1e-6)

# bool is logical: Sum and Max say whether any rank's is true, Min and Product whether
# every rank's is; an average is refused. A model's bool buffers (masks) broadcast as such.
# Before, every bool, int16 and uint16 tensor was refused ("hvd cannot reduce or move").
flags = np.array([rank == 0, True, False, rank == size - 1])
anyone, everyone = np.array([True, True, False, True]), np.array([size == 1, True, False, size == 1])
for op, want in ((hvd.Sum, anyone), (hvd.Max, anyone), (hvd.Min, everyone), (hvd.Product, everyone)):
    got = hvd.allreduce(flags, op=op)
    assert got.dtype == np.bool_ and np.array_equal(got, want), f"numpy bool {op.name}: {got}"
    got = hvd.allreduce(torch.from_numpy(flags), op=op)
    assert got.dtype == torch.bool and np.array_equal(got.numpy(), want), f"torch bool {op.name}: {got}"
    inplace = flags.copy()
    assert hvd.allreduce_(inplace, op=op) is inplace and np.array_equal(inplace, want), f"bool {op.name} in place"
for refused in (flags, torch.from_numpy(flags)):
    try:
        hvd.allreduce(refused)
        raise AssertionError("an average of bools was taken")
    except hvd.HvdInvalidArgumentError as error:
        assert "an average of bool tensors is no bool" in str(error), error
assert np.array_equal(hvd.broadcast(flags, size - 1), [size == 1, True, False, True])
got = hvd.allgather(torch.tensor([[rank % 2 == 1]]))
assert got.dtype == torch.bool and got.flatten().tolist() == [r % 2 == 1 for r in range(size)]

# Broadcast from every root, new array and in place, blocking and named.
for root in range(size):
    for dtype in (np.float32, np.int64, np.uint8):
        x = values(rank, (5, 3)).astype(dtype)
        check(hvd.broadcast(x, root), values(root, (5, 3)), f"broadcast root {root}", 0)
        check(x, values(rank, (5, 3)), "broadcast kept its input", 0)
        hvd.broadcast_(x, root, name=f"b.{root}.{np.dtype(dtype).name}")
        check(x, values(root, (5, 3)), f"broadcast_ root {root}", 0)
t = torch.full((2, 2), float(rank), dtype=torch.bfloat16)
check(hvd.broadcast(t, size - 1), np.full((2, 2), size - 1.0), "torch bfloat16 broadcast", 0)

# Allgather: first dimensions differ between ranks (rank 0 gives none), the rest agree.
for name in (None, "gather.rows"):
    mine = np.full((rank, 2, 3), rank, dtype=np.int32)
    got = hvd.allgather(mine, name=name)
    want = np.concatenate([np.full((r, 2, 3), r, dtype=np.int32) for r in range(size)])
    assert got.dtype == np.int32 and np.array_equal(got, want), f"allgather {name}: {got}"
got = hvd.allgather(torch.tensor([float(rank)], dtype=torch.float16))
assert torch.is_tensor(got) and got.dtype == torch.float16 and got.tolist() == [float(r) for r in range(size)]

# Objects.
assert hvd.broadcast_object({"epoch": rank, "name": "x" * rank}, root_rank=size - 1) == {"epoch": size - 1, "name": "x" * (size - 1)}
assert hvd.allgather_object((rank, "r" * rank)) == [(r, "r" * r) for r in range(size)]
assert hvd.allgather_object(rank, name="objects") == list(range(size))

hvd.barrier()
print("ok")
sys.stdout.flush()
