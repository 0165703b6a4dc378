"""Rank side of test_join.py: Horovod's join() with hvd.torch. First Horovod's own check (one
rank joins first; the others' averages count it as zero, fused and cached alike), with min
beside it and the allgathers and broadcasts that Horovod refuses beside a joined rank; then training on uneven data, each rank's parameters
checked against a replay of every rank's steps."""

import torch

import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
torch.set_num_threads(1)


def check_last(last, first):
    """The last to join: the first joiner only when it is alone."""
    assert isinstance(last, int), last
    assert (last == first) if size == 1 else (last != first and 0 <= last < size), (last, first)


for first in range(min(size, 2)):
    for caching in (False, True):
        a = torch.arange(25, dtype=torch.float32).reshape(5, 5) + 1
        b = torch.arange(17, dtype=torch.float64) - 8
        if caching:  # every rank runs the names once, so the joined round finds them cached
            hvd.synchronize(hvd.allreduce_async(a, name="a", op=hvd.Average))
            hvd.synchronize(hvd.allreduce_async(b, name="b", op=hvd.Average))
        if rank == first:
            check_last(hvd.join(), first)
            continue
        ha = hvd.allreduce_async(a, name="a", op=hvd.Average)
        hb = hvd.allreduce_async(b, name="b", op=hvd.Average)
        averaged_a, averaged_b = hvd.synchronize(ha), hvd.synchronize(hb)
        assert torch.equal(averaged_a, a * (size - 1) / size), averaged_a
        assert torch.allclose(averaged_b, b * (size - 1) / size), averaged_b
        working = [r for r in range(size) if r != first]
        # The joined rank is left out of min, max and product, named or not.
        lowest = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Min)
        assert lowest.item() == min(working), lowest
        highest = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Max, name="highest")
        assert highest.item() == max(working), highest
        product = hvd.allreduce(torch.tensor([float(rank + 1)]), op=hvd.Product)
        assert product.item() == torch.tensor([float(r + 1) for r in working]).prod().item(), product
        # As in Horovod, only reductions run beside a joined rank: an allgather, and a
        # broadcast from any root, raise on the ranks still working (a RuntimeError, as
        # Horovod's do), and the joined rank stays in join.
        for call in (lambda: hvd.allgather(torch.full((rank + 1, 2), rank)),
                     lambda: hvd.allgather(torch.full((rank + 1, 2), rank), name="gathered"),
                     lambda: hvd.broadcast(torch.zeros(3), root_rank=working[-1], name="from-working")):
            try:
                call()
                raise AssertionError("an allgather or broadcast beside a joined rank did not raise")
            except RuntimeError as e:
                assert "only reductions run beside joined ranks" in str(e), e
        try:
            hvd.broadcast(torch.zeros(3), root_rank=first, name="from-joined")
            raise AssertionError("a broadcast from a joined rank did not raise")
        except hvd.HvdUsageError as e:
            assert "the root has called join()" in str(e), e
        check_last(hvd.join(), first)

try:
    hvd.join(device="cuda:0")
    raise AssertionError("join took a device that is no index")
except TypeError as e:
    assert "device must be an int" in str(e), e


# Training on uneven data, as Horovod's docs show join(): rank r has r + 2 batches, and
# joins when it runs out. Each step averages the gradients of the ranks that still have a
# batch over size() (the joined ranks count as zero, as in Horovod).
def make_model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))


def batches(r):
    return r + 2


def data(r, step):
    g = torch.Generator().manual_seed(100 * r + step)
    return torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)


model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters())
for step in range(batches(rank)):
    x, y = data(rank, step)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
last = hvd.join()
assert last == size - 1, last  # the rank with the most batches ends its last step after the others joined

reference = make_model()
for step in range(batches(rank)):
    total = [torch.zeros_like(p) for p in reference.parameters()]
    for r in range(size):
        if step >= batches(r):
            continue
        reference.zero_grad()
        x, y = data(r, step)
        torch.nn.functional.mse_loss(reference(x), y).backward()
        total = [t + p.grad for t, p in zip(total, reference.parameters())]
    with torch.no_grad():
        for p, t in zip(reference.parameters(), total):
            p -= 0.1 * t / size
for mine, expected in zip(model.parameters(), reference.parameters()):
    assert torch.allclose(mine, expected, atol=1e-6, rtol=1e-5), (mine, expected)

# After the join every rank is back: a sum holds all of them.
everyone = hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum)
assert everyone.item() == size, everyone
print("ok")
