"""Rank side of test_torch.py's autograd test: gradients flow back through hvd.torch's
allreduce, allgather and broadcast as through Horovod's (horovod/torch/mpi_ops.py), on any
number of ranks. Each rank's loss weighs the collective's result by (rank + 1), so every
expected gradient below is worked out from the ranks' weights, not read off hvd.

    allreduce, op Average or Sum: the gradient is the ranks' output gradients reduced with
        the same op (and the same scale factors)
    allgather: the ranks' output gradients averaged, then this rank's own rows
    broadcast: the ranks' output gradients averaged on the root, zero elsewhere
    Min, Max, Product: no gradient; backward raises HvdUsageError saying so
Prints `ok` when every check held.
"""

import torch

import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
weight = rank + 1
mean_weight = (size + 1) / 2  # the ranks' weights 1..size, averaged
sum_weight = size * (size + 1) / 2


def leaf(*shape):
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape).add(rank).requires_grad_()


def check(what, got, expected):
    assert torch.allclose(got, expected), f"{what}: {got} != {expected}"
    print(f"{what}: right", flush=True)


for op, reduced_weight in ((hvd.Average, mean_weight), (hvd.Sum, sum_weight)):
    x = leaf(4)
    y = hvd.allreduce(x * 3, op=op)  # through a torch op before, to see the chain
    assert y.requires_grad
    (y * weight).sum().backward()
    check(f"allreduce {op.name}", x.grad, torch.full((4,), 3 * reduced_weight))

x = leaf(2)
y = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5, name="scaled")
(y * weight).sum().backward()
check("allreduce scaled", x.grad, torch.full((2,), 2.0 * 0.5 * sum_weight))

# grouped_allreduce: each tensor as allreduce would give it (shapes and dtypes of their own),
# the gradients likewise; grouped_allreduce_ in place. Before, hvd.torch had neither.
a, b = leaf(3), leaf(2, 2)
c = torch.full((2,), float(rank), dtype=torch.float64)
ya, yb, yc = hvd.grouped_allreduce([a * 3, b, c], op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5, name="grp")
check("grouped values", yc, torch.full((2,), float(sum(range(size))), dtype=torch.float64))
assert yc.dtype == torch.float64 and yb.shape == (2, 2) and ya.requires_grad
(ya * weight).sum().add((yb * weight).sum()).backward()
check("grouped allreduce gradient", a.grad, torch.full((3,), 3 * sum_weight))
check("grouped allreduce gradient of the second", b.grad, torch.full((2, 2), sum_weight))
group = [torch.full((2,), float(rank + 1)), torch.arange(3.0) * (rank + 1)]
assert hvd.grouped_allreduce_(group, op=hvd.Average) is group
check("grouped in place", group[0], torch.full((2,), mean_weight))
check("grouped in place, second", group[1], torch.arange(3.0) * mean_weight)

# The async grouped calls (Horovod's): one handle for the group, its results in order.
handle = hvd.grouped_allreduce_async([torch.full((2,), float(rank)), torch.ones(3, dtype=torch.float64)],
                                     op=hvd.Sum, postscale_factor=2.0, name="agrp")
assert handle < 0, handle  # never one of the runtime's own handles
while not hvd.poll(handle):
    pass
sa, sb = hvd.synchronize(handle)
check("grouped async", sa, torch.full((2,), 2.0 * sum(range(size))))
check("grouped async, second", sb, torch.full((3,), 2.0 * size, dtype=torch.float64))
try:
    hvd.synchronize(handle)
    raise AssertionError("a group's handle was synchronized twice")
except hvd.HvdUsageError:
    pass
group = [torch.full((2,), float(rank + 1))]
assert hvd.synchronize(hvd.grouped_allreduce_async_(group, op=hvd.Sum, prescale_factor=3.0))[0] is group[0]
check("grouped async in place", group[0], torch.full((2,), 3.0 * sum_weight))
# allreduce_, allreduce_async and allreduce_async_ take Horovod's prescale_factor and
# postscale_factor (and its positional order: ..., op, prescale, postscale, process_set);
# they were TypeErrors. Named: the fast path takes unnamed calls only.
t = torch.full((2,), float(rank + 1))
assert hvd.allreduce_(t, op=hvd.Sum, prescale_factor=3.0, postscale_factor=0.5) is t
check("allreduce_ scaled", t, torch.full((2,), 1.5 * sum_weight))
t = torch.full((2,), float(rank + 1))
assert hvd.allreduce_(t, None, "scaled-positional", hvd.Average, 2.0, 0.25) is t
check("allreduce_ scaled, positional", t, torch.full((2,), 0.5 * mean_weight))
src = torch.full((3,), float(rank + 1))
out = hvd.synchronize(hvd.allreduce_async(src, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5))
check("allreduce_async scaled", out, torch.full((3,), sum_weight))
check("allreduce_async leaves its input", src, torch.full((3,), float(rank + 1)))
t = torch.full((2,), float(rank + 1), dtype=torch.float64)
assert hvd.synchronize(hvd.allreduce_async_(t, op=hvd.Sum, prescale_factor=4.0, postscale_factor=0.5)) is t
check("allreduce_async_ scaled", t, torch.full((2,), 2.0 * sum_weight, dtype=torch.float64))
whole = hvd.synchronize(hvd.allreduce_async(torch.full((2,), 3, dtype=torch.int32), op=hvd.Sum, prescale_factor=0.5))
assert whole.dtype == torch.int32 and whole.tolist() == [size, size], whole  # 3 * 0.5 truncated, as Horovod's
# grouped_allgather: each tensor as allgather gives it, with and without gradients.
ga, gb = hvd.grouped_allgather([torch.full((rank + 1, 2), rank), torch.tensor([float(rank)])], name="gg")
check("grouped allgather", ga, torch.cat([torch.full((r + 1, 2), r) for r in range(size)]))
check("grouped allgather, second", gb, torch.arange(float(size)))
(ha,) = hvd.synchronize(hvd.grouped_allgather_async([torch.tensor([rank])]))
check("grouped allgather async", ha, torch.arange(size))
x = leaf(rank + 1, 2)
(y,) = hvd.grouped_allgather([x])
(y * weight * torch.arange(1.0, y.shape[0] + 1).unsqueeze(1)).sum().backward()
first = rank * (rank + 1) // 2
check("grouped allgather gradient", x.grad,
      mean_weight * torch.arange(first + 1.0, first + rank + 2).unsqueeze(1).expand(rank + 1, 2))

# reducescatter: rank r's rows of the reduction; Horovod's gradient gathers every rank's
# output gradient (rank r's loss weighs its rows by r + 1), scaled as the forward, times
# size for Sum (its own tests: ones in, size out). 2 * size + 1 rows: rank 0 gets three.
rows = 2 * size + 1
shares = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
for op, divide in ((hvd.Average, size), (hvd.Sum, 1)):
    x = leaf(rows, 2)
    y = hvd.reducescatter(x, op=op, prescale_factor=2.0)
    first = sum(shares[:rank])
    reduced = sum(torch.arange(rows * 2.0).reshape(rows, 2).add(r) for r in range(size)) * 2.0 / divide
    check(f"reducescatter {op.name}", y, reduced[first:first + shares[rank]])
    (y * weight).sum().backward()
    row_weights = torch.cat([torch.full((shares[r], 2), float(r + 1)) for r in range(size)])
    check(f"reducescatter {op.name} gradient", x.grad, row_weights * 2.0 * (size if op == hvd.Sum else 1))

# grouped_reducescatter: each tensor as reducescatter gives it, with and without gradients.
ga, gb = hvd.grouped_reducescatter([torch.full((rows, 2), float(rank)), torch.arange(float(rows)) + rank], op=hvd.Sum,
                                   postscale_factor=2.0, name="grs")
check("grouped reducescatter", ga, torch.full((shares[rank], 2), 2.0 * sum(range(size))))
check("grouped reducescatter, second",
      gb, 2.0 * sum(torch.arange(float(rows)) + r for r in range(size))[sum(shares[:rank]):sum(shares[:rank + 1])])
x = leaf(rows, 2)
(y,) = hvd.grouped_reducescatter([x], op=hvd.Sum)
(y * weight).sum().backward()
check("grouped reducescatter gradient", x.grad,
      torch.cat([torch.full((shares[r], 2), float(r + 1)) for r in range(size)]) * size)

# alltoall: the gradient goes back the way the rows came. Rank r sends its first row to
# rank 0 and the rest to rank 1 (rank 2 and up get none: an empty result there); rank d
# weighs what it got by d + 1.
x = leaf(3, 2)
splits = torch.tensor([1, 2] + [0] * (size - 2)) if size > 1 else torch.tensor([3])
y, received = hvd.alltoall(x, splits=splits)
assert received.tolist() == [int(splits[rank]) if rank < len(splits) else 0 for _ in range(size)], received
assert y.shape == (int(splits[rank]) * size, 2), y.shape
(y * weight).sum().backward()
check("alltoall gradient", x.grad, torch.tensor([[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]) if size > 1 else torch.ones(3, 2))
# Every rank giving no rows: an empty result of the right shape (it raised from torch before).
assert hvd.allgather(torch.empty(0, 3)).shape == (0, 3)

# Rank r gives r + 1 rows of 2; row i of the result is weighted (i + 1) by every rank.
x = leaf(rank + 1, 2)
y = hvd.allgather(x)
rows = y.shape[0]
assert rows == sum_weight and y.requires_grad
(y * weight * torch.arange(1.0, rows + 1).unsqueeze(1)).sum().backward()
first = rank * (rank + 1) // 2  # rows given by the ranks before this one
own = torch.arange(first + 1.0, first + rank + 2).unsqueeze(1).expand(rank + 1, 2)
check("allgather", x.grad, mean_weight * own)

root = size - 1
x = leaf(3)
y = hvd.broadcast(x, root_rank=root)
(y * weight).sum().backward()
check("broadcast", x.grad, torch.full((3,), mean_weight if rank == root else 0.0))

for op in (hvd.Max, hvd.Min, hvd.Product):
    x = leaf(2)
    y = hvd.allreduce(x, op=op)
    try:
        y.sum().backward()
        raise AssertionError(f"backward through allreduce {op.name} did not raise")
    except hvd.HvdUsageError as error:
        assert op.name in str(error) and "Sum or Average" in str(error), error
        print(f"allreduce {op.name}: no gradient, said so", flush=True)

# Without a gradient to carry, the plain calls: results that need none.
with torch.no_grad():
    assert not hvd.allreduce(leaf(2)).requires_grad
assert not hvd.allgather(torch.ones(2)).requires_grad

print("ok", flush=True)
