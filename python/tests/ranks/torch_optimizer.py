"""Rank side of test_torch.py: hvd.torch's DistributedOptimizer and broadcasts, checked
against references each rank computes by replaying every rank's data locally."""

import warnings

import torch

import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
torch.manual_seed(0)
torch.set_num_threads(1)


def make_model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))


def data(r, step=0):
    g = torch.Generator().manual_seed(100 * r + step)
    return torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)


def local_grads(r, step=0, passes=1):
    """Rank r's gradients (summed over `passes` backward passes), on a fresh model."""
    model = make_model()
    for k in range(passes):
        x, y = data(r, step + k)
        torch.nn.functional.mse_loss(model(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]


def average_grads(step=0, passes=1):
    per_rank = [local_grads(r, step, passes) for r in range(size)]
    return [sum(g[i] for g in per_rank) / size for i in range(len(per_rank[0]))]


def close(a, b, tol=1e-6):
    return all(torch.allclose(x, y, atol=tol, rtol=tol) for x, y in zip(a, b))


# Gradients are averaged across ranks, and step() applies exactly the averaged gradient.
model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters())
assert isinstance(opt, torch.optim.SGD)
x, y = data(rank)
torch.nn.functional.mse_loss(model(x), y).backward()
before = [p.detach().clone() for p in model.parameters()]
opt.step()
want = average_grads()
assert close([p.grad for p in model.parameters()], want), "averaged gradients"
assert close([p.detach() for p in model.parameters()], [b - 0.1 * g for b, g in zip(before, want)]), "SGD step"

# zero_grad between backward and step would lose the pending allreduces: refused (one
# rank alone has no allreduces, as in Horovod).
torch.nn.functional.mse_loss(model(x), y).backward()
try:
    opt.zero_grad()
    assert size == 1, "zero_grad with pending allreduces was accepted"
except AssertionError as error:
    assert "before optimizer.step() or optimizer.synchronize()" in str(error), error
opt.step()
opt.zero_grad()

# A backward pass that raises on every rank (out of memory, say), caught to skip the
# batch: zero_grad() waits out the allreduces its hooks had started and the training goes
# on, the next step applying only its own averaged gradient, with no allreduce of the
# skipped batch left pending to refuse later zero_grad() calls.
class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("out of memory (raised by the test)")


model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters())
x, y = data(rank)
try:
    # The last layer's gradients are accumulated (their hooks start allreduces) before Boom raises.
    torch.nn.functional.mse_loss(model[2](Boom.apply(model[1](model[0](x)))), y).backward()
    raise SystemExit("the backward pass did not raise")
except RuntimeError as error:
    assert "out of memory" in str(error), error
opt.zero_grad()
before = [p.detach().clone() for p in model.parameters()]
torch.nn.functional.mse_loss(model(x), y).backward()
opt.step()
want = average_grads()
assert close([p.grad for p in model.parameters()], want), "the step after a skipped batch averaged its own gradients"
assert close([p.detach() for p in model.parameters()], [b - 0.1 * g for b, g in zip(before, want)]), "its SGD step"
opt.zero_grad()
# With op=Adasum the hooks step each parameter locally before its delta's allreduce: a
# skipped batch puts every parameter back where it was.
model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
                               op=hvd.Adasum)
before = [p.detach().clone() for p in model.parameters()]
try:
    torch.nn.functional.mse_loss(model[2](Boom.apply(model[1](model[0](x)))), y).backward()
except RuntimeError:
    pass
opt.zero_grad()
assert close([p.detach() for p in model.parameters()], before, tol=0), "Adasum: a skipped batch moved the parameters"
torch.nn.functional.mse_loss(model(x), y).backward()
opt.step()
opt.zero_grad()

# Gradient accumulation: two backward passes per allreduce; the sum of both, averaged.
model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
                               backward_passes_per_step=2)
for k in range(2):
    xk, yk = data(rank, 10 + k)
    torch.nn.functional.mse_loss(model(xk), yk).backward()
opt.synchronize()
assert close([p.grad for p in model.parameters()], average_grads(10, passes=2)), "accumulated gradients"
with opt.skip_synchronize():
    opt.step()
opt.zero_grad()

# synchronize(), clip, then step() inside skip_synchronize(): no second allreduce, no warning.
model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters())
torch.nn.functional.mse_loss(model(x), y).backward()
opt.synchronize()
torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
clipped = [p.grad.clone() for p in model.parameters()]
with warnings.catch_warnings():
    warnings.simplefilter("error")
    with opt.skip_synchronize():
        opt.step()
assert close([p.grad for p in model.parameters()], clipped), "skip_synchronize kept the clipped gradients"
opt.zero_grad()

# fp16 compression: gradients travel as float16 and come back float32, close to the average.
model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
                               compression=hvd.Compression.fp16)
torch.nn.functional.mse_loss(model(x), y).backward()
opt.synchronize()
assert all(p.grad.dtype == torch.float32 for p in model.parameters())
assert close([p.grad for p in model.parameters()], average_grads(), tol=2e-3), "fp16 gradients"
with opt.skip_synchronize():
    opt.step()
opt.zero_grad()

# Horovod's gradient_predivide_factor (the average split: 1 / factor before the sum, factor /
# size after it), alone and with fp16 compression, and its fusion groups (num_groups,
# groups), which hvd's engine makes moot: the same averaged gradients either way. Before,
# each raised TypeError (unexpected keyword argument).
for options in ({"gradient_predivide_factor": 4.0},
                {"gradient_predivide_factor": 4.0, "compression": hvd.Compression.fp16},
                {"num_groups": 2}, {"groups": "every parameter"}):
    model = make_model()
    if "groups" in options:
        options = {"groups": [list(model.parameters())]}
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), **options)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.synchronize()
    tol = 2e-3 if "compression" in options else 1e-6
    assert close([p.grad for p in model.parameters()], average_grads(), tol=tol), f"gradients with {options}"
    with opt.skip_synchronize():
        opt.step()
    opt.zero_grad()
try:  # sparse_as_dense where hvd's earlier signature had it: Horovod's gradient_predivide_factor now
    hvd.DistributedOptimizer(torch.optim.SGD(make_model().parameters(), lr=0.1), None, hvd.Compression.none, 1,
                             hvd.Average, True)
    raise AssertionError("a bool was taken for gradient_predivide_factor")
except TypeError as error:
    assert "give sparse_as_dense= by name" in str(error), error
for refused, words in (({"op": hvd.Sum, "gradient_predivide_factor": 2.0}, "splits an average"),
                       ({"gradient_predivide_factor": 0.0}, "must be positive"),
                       ({"num_groups": 2, "groups": [[]]}, "not given with num_groups")):
    try:
        hvd.DistributedOptimizer(torch.optim.SGD(make_model().parameters(), lr=0.1), **refused)
        raise AssertionError(f"{refused} was accepted")
    except ValueError as error:
        assert words in str(error), error

# A parameter this rank's forward pass did not use: the others still get their average.
model = make_model()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters())
out = model(x) if rank != 0 else model[2](torch.zeros(8, 5))  # rank 0 skips the first layer
torch.nn.functional.mse_loss(out, y).backward()
opt.synchronize()
first_weight = model[0].weight.grad
if first_weight is None:  # one rank alone: nothing to allreduce, so no zeros were made for it
    assert size == 1
    first_weight = torch.zeros_like(model[0].weight)
contributions = [local_grads(r)[0] if r != 0 else torch.zeros_like(first_weight) for r in range(size)]
assert torch.allclose(first_weight, sum(contributions) / size, atol=1e-6), "unused parameter"
opt.zero_grad(set_to_none=True)
with opt.skip_synchronize():
    pass

# broadcast_parameters: every rank ends with rank 0's values (buffers and integers included).
net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
with torch.no_grad():
    for p in net.parameters():
        p.fill_(float(rank))
net[1].num_batches_tracked.fill_(rank + 7)
# A bool mask and an int16 buffer, as attention masks and quantized models keep: before,
# broadcast_parameters raised TypeError on them (hvd had no bool, int16 or uint16).
net[0].register_buffer("mask", torch.tensor([rank == 0, rank != 0]))
net[0].register_buffer("codes", torch.full((3,), rank + 100, dtype=torch.int16))
hvd.broadcast_parameters(net.state_dict(), root_rank=0)
assert all(torch.all(p == 0) for p in net.parameters()) and int(net[1].num_batches_tracked) == 7
assert net[0].mask.tolist() == [True, False] and net[0].codes.tolist() == [100] * 3

# broadcast_optimizer_state: rank 0 has Adam moments (after a step, as after a resume), the
# others have none; afterwards all have rank 0's, hyperparameters included.
model = make_model()
adam = torch.optim.Adam(model.parameters(), lr=0.01 if rank == 0 else 0.5)
if rank == 0:
    torch.nn.functional.mse_loss(model(x), y).backward()
    adam.step()
hvd.broadcast_optimizer_state(adam, root_rank=0)
assert adam.param_groups[0]["lr"] == 0.01
state = adam.state_dict()["state"]
assert len(state) == 4, state.keys()
moments = torch.cat([state[k]["exp_avg"].flatten() for k in sorted(state)])
gathered = hvd.allgather(moments.unsqueeze(0))
assert all(torch.equal(gathered[0], gathered[r]) for r in range(size)), "Adam state differs"

# Wrapping an optimizer that already has state (momentum from a checkpoint) keeps it.
model = make_model()
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
torch.nn.functional.mse_loss(model(x), y).backward()
sgd.step()
sgd.zero_grad()
wrapped = hvd.DistributedOptimizer(sgd, named_parameters=model.named_parameters())
assert all(torch.equal(wrapped.state[p]["momentum_buffer"], sgd.state[p]["momentum_buffer"])
           for p in model.parameters()), "momentum dropped by the wrapper"

# Sparse gradients (nn.Embedding(sparse=True)): each rank looks up its own rows, rank 0
# twice one row; gathered (Horovod's default) or made dense, averaged, the step equals the
# dense embedding's. Before, backward's hook raised "Cannot access data pointer of Tensor
# that doesn't have storage".
def embedding_after_step(sparse, **options):
    torch.manual_seed(5)
    emb = torch.nn.Embedding(10, 3, sparse=sparse)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.5), named_parameters=emb.named_parameters(),
                                   **options)
    rows = torch.tensor([rank, rank + 1, rank] if rank == 0 else [rank + 2, rank])
    emb(rows).pow(2).sum().backward()
    opt.step()
    return emb.weight.detach().clone()


want = embedding_after_step(False)
for options in ({}, {"sparse_as_dense": True}):
    got = embedding_after_step(True, **options)
    assert torch.allclose(got, want, atol=1e-6), f"sparse embedding {options}: {got} against {want}"
    assert all(torch.equal(g, got) for g in hvd.allgather(got.unsqueeze(0))), f"ranks differ {options}"
if size > 1:  # the average was taken, not the sum
    assert not torch.equal(want, embedding_after_step(False, op=hvd.Sum))
# Horovod's sparse_allreduce_async: a function that returns every rank's entries, averaged.
sparse = torch.sparse_coo_tensor(torch.tensor([[rank % 4], [1]]), torch.tensor([float(rank + 1)]), (4, 2))
summed = hvd.sparse_allreduce_async(sparse, name="sp", op=hvd.Average)().coalesce().to_dense()
dense_want = sum(torch.sparse_coo_tensor(torch.tensor([[r % 4], [1]]), torch.tensor([float(r + 1)]), (4, 2)).to_dense()
                 for r in range(size)) / size
assert torch.allclose(summed, dense_want), (summed, dense_want)
for bad, kind in ((hvd.Max, ValueError), (None, ValueError)):
    try:
        hvd.sparse_allreduce_async(sparse, name="sp-bad", op=bad)
        raise AssertionError(f"op={bad} was taken")
    except kind as error:
        assert "sums or averages" in str(error), error
try:
    hvd.sparse_allreduce_async(torch.ones(2), name="sp-dense", op=hvd.Sum)
    raise AssertionError("a dense tensor was taken")
except TypeError as error:
    assert "takes a sparse COO tensor" in str(error), error

for refused in (torch.zeros(2, 2).to_sparse(), torch.zeros(2, device="meta")):
    for call in (hvd.allreduce, hvd.allreduce_):
        try:
            call(refused, op=hvd.Sum)
            raise AssertionError(f"{refused.layout} {refused.device} was taken")
        except TypeError as error:
            assert "sparse_coo, and hvd takes dense tensors" in str(error) or "on device meta" in str(error), error

# hvd.torch.allreduce: compression and scale factors.
t = torch.full((5,), float(rank + 1))
got = hvd.allreduce(t, op=hvd.Sum, compression=hvd.Compression.fp16, prescale_factor=2.0, postscale_factor=0.5)
assert got.dtype == torch.float32 and torch.allclose(got, torch.full((5,), float(sum(range(1, size + 1)))))
assert hvd.broadcast_object({"epoch": 3 + rank}, root_rank=0) == {"epoch": 3}
print("ok", flush=True)
