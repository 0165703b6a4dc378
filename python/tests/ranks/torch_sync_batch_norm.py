"""Rank side of test_torch.py's SyncBatchNorm test: each rank normalizes its own batch (of a
different size on each rank) with hvd.torch.SyncBatchNorm, and checks the output, the input's
gradient, the weight and bias gradients summed over ranks, and the running statistics
against one torch BatchNorm over every rank's batch concatenated, replayed here; then eval
mode against that BatchNorm's. For (N, C, L) and (N, C, H, W) inputs, momentum 0.1 and None."""

import torch

import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
torch.set_num_threads(1)


def data(r, shape):
    g = torch.Generator().manual_seed(10 + r)
    x = torch.randn((3 + r,) + shape, generator=g) * 2 + 1
    return x, torch.randn(x.shape, generator=g)


def close(a, b, what):
    assert torch.allclose(a, b, rtol=1e-4, atol=1e-5), f"{what}: {a} vs {b}"


for shape, reference_class in (((4, 5), torch.nn.BatchNorm1d), ((4, 3, 2), torch.nn.BatchNorm2d)):
    for momentum in (0.1, None):
        sync = hvd.SyncBatchNorm(4, momentum=momentum)
        reference = reference_class(4, momentum=momentum)
        with torch.no_grad():
            for layer in (sync, reference):
                layer.weight.copy_(torch.arange(1.0, 5.0))
                layer.bias.copy_(torch.full((4,), 0.5))
        batches = [data(r, shape) for r in range(size)]
        start = sum(batches[r][0].shape[0] for r in range(rank))
        mine = slice(start, start + batches[rank][0].shape[0])
        for step in range(2):  # the running statistics move twice
            sync.zero_grad()
            reference.zero_grad()
            x = batches[rank][0].clone().requires_grad_()
            out = sync(x)
            (out * batches[rank][1]).sum().backward()
            everything = torch.cat([b[0] for b in batches]).requires_grad_()
            expected = reference(everything)
            (expected * torch.cat([b[1] for b in batches])).sum().backward()
            what = f"{reference_class.__name__} momentum {momentum} step {step}"
            close(out, expected[mine].detach(), what + " output")
            close(x.grad, everything.grad[mine], what + " input gradient")
            close(hvd.allreduce(sync.weight.grad, op=hvd.Sum), reference.weight.grad, what + " weight gradient")
            close(hvd.allreduce(sync.bias.grad, op=hvd.Sum), reference.bias.grad, what + " bias gradient")
            close(sync.running_mean, reference.running_mean, what + " running mean")
            close(sync.running_var, reference.running_var, what + " running variance")
        sync.eval()
        reference.eval()
        close(sync(batches[rank][0]), reference(batches[rank][0]), "eval mode")
print("ok", flush=True)
