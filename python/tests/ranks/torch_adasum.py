"""Rank side of test_adasum.py: hvd.torch.DistributedOptimizer(op=hvd.Adasum), Horovod's
delta optimizer, against a replay of every rank: each rank's own model and optimizer (its
own Adam moments) step on its own data from the shared parameters, and the parameters
move by the Adasum tree of those steps, parameter by parameter. Prints "ok" on success."""

import copy
import sys

import numpy as np
import torch

import hvd.torch as hvd
from adasum_reference import tree

hvd.init()
rank, size = hvd.rank(), hvd.size()
torch.set_num_threads(1)


def make_model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))


def data(r, step, k):
    g = torch.Generator().manual_seed(1000 * r + 10 * step + k)
    return torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)


def backward(model, r, step, passes):
    for k in range(passes):
        x, y = data(r, step, k)
        torch.nn.functional.mse_loss(model(x), y).backward()


def run(make_optimizer, steps, passes, compression=hvd.Compression.none):
    """The distributed model after `steps` steps, and the replay's."""
    model = make_model()
    optimizer = hvd.DistributedOptimizer(make_optimizer(model.parameters()), named_parameters=model.named_parameters(),
                                         op=hvd.Adasum, backward_passes_per_step=passes, compression=compression)
    replicas = [make_model() for _ in range(size)]
    optimizers = [make_optimizer(m.parameters()) for m in replicas]
    shared = [p.detach().double().clone() for p in make_model().parameters()]
    for step in range(steps):
        optimizer.zero_grad()
        backward(model, rank, step, passes)
        optimizer.step()
        deltas = []
        for r, (replica, local) in enumerate(zip(replicas, optimizers)):
            with torch.no_grad():
                for p, s in zip(replica.parameters(), shared):
                    p.copy_(s)
            local.zero_grad()
            backward(replica, r, step, passes)
            local.step()
            deltas.append([(p.detach().double() - s).ravel().numpy() for p, s in zip(replica.parameters(), shared)])
        shared = [s + torch.from_numpy(tree([d[i] for d in deltas])).reshape(s.shape)
                  for i, s in enumerate(shared)]
    return model, shared


# (name, optimizer, backward passes a step, compression, tolerance): float16 deltas are
# combined to float16's precision.
for name, make_optimizer, passes, compression, tolerance in (
        ("SGD", lambda ps: torch.optim.SGD(ps, lr=0.1), 1, hvd.Compression.none, 1e-5),
        ("Adam", lambda ps: torch.optim.Adam(ps, lr=0.05), 1, hvd.Compression.none, 1e-5),
        ("SGD with momentum, 2 passes a step", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), 2,
         hvd.Compression.none, 1e-5),
        ("SGD, deltas sent as float16", lambda ps: torch.optim.SGD(ps, lr=0.1), 1, hvd.Compression.fp16, 2e-3)):
    model, want = run(make_optimizer, steps=3, passes=passes, compression=compression)
    for (pname, p), w in zip(model.named_parameters(), want):
        assert torch.allclose(p.detach().double(), w, rtol=tolerance, atol=tolerance / 10), \
            f"{name}: {pname} is {p.detach().ravel()[:4]}, the replay says {w.ravel()[:4]}"
    # Every rank holds the same parameters.
    flat = torch.cat([p.detach().ravel() for p in model.parameters()])
    gathered = hvd.allgather(flat[None])
    assert all(torch.equal(gathered[0], row) for row in gathered), f"{name}: ranks hold different parameters"

# A parameter no rank's forward pass used still steps (its zero gradient), on every rank alike.
model = make_model()
unused = torch.nn.Parameter(torch.ones(3))
params = list(model.parameters()) + [unused]
named = list(model.named_parameters()) + [("unused", unused)]
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.1, weight_decay=0.5), named_parameters=named,
                                     op=hvd.Adasum)
backward(model, rank, 0, 1)
optimizer.step()
assert torch.allclose(unused.detach(), torch.full((3,), 0.95)), unused
try:
    with optimizer.skip_synchronize():
        pass
except AssertionError as error:
    assert "op=Adasum" in str(error), error
else:
    raise AssertionError("skip_synchronize() was accepted with op=Adasum")

hvd.barrier()
print("ok")
sys.stdout.flush()
