"""hvd.torch on CUDA tensors: allreduce (in and out of place, named async, behind torch's
stream without the caller waiting), broadcast, allgather, reducescatter and alltoall against
the values every rank can compute, on the GPU of its local rank (or GPU 0 when ranks share
one). Prints "ok <backend>" on success."""

import sys

import torch

import hvd.torch as hvd


def main():
    hvd.init()
    device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(device)
    n, r = hvd.size(), hvd.rank()
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8):
        x = (torch.arange(1000, device=device) % 3 + r + 1).to(dtype)
        want = sum((torch.arange(1000, device=device) % 3 + k + 1) for k in range(n)).to(dtype)
        got = hvd.allreduce(x, op=hvd.Sum)
        assert got.device == device and torch.equal(got, want), (dtype, got[:5], want[:5])
        y = x.clone()
        hvd.allreduce_(y, op=hvd.Sum)
        assert torch.equal(y, want), dtype
    handles = [hvd.allreduce_async_(torch.full((10 + k,), float(r), device=device), name=f"g{k}") for k in range(50)]
    mean = sum(range(n)) / n
    for k, h in enumerate(handles):
        got = hvd.synchronize(h)
        assert torch.allclose(got, torch.full((10 + k,), mean, device=device)), (k, got[:3])
    b = torch.full((7,), float(r), device=device)
    hvd.broadcast_(b, root_rank=n - 1)
    assert torch.equal(b, torch.full((7,), float(n - 1), device=device))
    # allgather and alltoall results stay on the GPU, in memory hvd allocated there: torch's
    # allocator hands out nothing for them (a trip through host memory ended in .to(device),
    # which allocates), and the tensor frees that memory when it goes.
    mine = torch.full((r + 1, 2), float(r), device=device)
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated(device)
    g = hvd.allgather(mine)
    assert torch.cuda.memory_allocated(device) == allocated, "the allgather's result went through torch's allocator"
    want = torch.cat([torch.full((k + 1, 2), float(k), device=device) for k in range(n)])
    assert g.device == device and torch.equal(g, want), (g, want)
    g.add_(1)  # the result is the caller's to write
    assert torch.equal(g, want + 1)
    del g
    # A result dropped while torch's stream still reads it: the next allgather (on hvd's own
    # stream) must not get its memory before that read is done. The sleep holds the read back.
    sums = []
    for k in range(30):
        g = hvd.allgather(torch.full((1 << 18,), float(k + r), device=device))
        torch.cuda._sleep(2_000_000)
        sums.append(g.sum())
        del g
    for k, got in enumerate(sums):
        want = float(sum(k + q for q in range(n)) * (1 << 18))
        assert got.item() == want, (k, got.item(), want)
    for k in range(20):  # named, async, of several dtypes; each freed with its tensor
        dtype = (torch.float16, torch.int64, torch.bfloat16, torch.uint8)[k % 4]
        h = hvd.allgather_async(torch.full((k + r, 3), r + k, device=device, dtype=dtype), name=f"ag{k}")
        got = hvd.synchronize(h)
        want = torch.cat([torch.full((k + q, 3), q + k, device=device, dtype=dtype) for q in range(n)])
        assert got.device == device and got.dtype == dtype and torch.equal(got, want), (k, got, want)
    # reducescatter (uneven rows: 2n+1) and alltoall (uneven and empty blocks) on the GPU.
    rows = 2 * n + 1
    x = torch.arange(rows * 3, device=device, dtype=torch.float32).reshape(rows, 3) + r
    part = hvd.reducescatter(x, op=hvd.Sum)
    whole = sum(torch.arange(rows * 3, device=device, dtype=torch.float32).reshape(rows, 3) + k for k in range(n))
    first = r * (rows // n) + min(r, rows % n)
    assert part.device == device and torch.equal(part, whole[first:first + part.shape[0]]), (part, whole)
    splits = torch.tensor([(r + d) % 3 for d in range(n)], dtype=torch.int32)
    send = torch.cat([torch.full((int(s), 2), float(100 * r + d), device=device) for d, s in enumerate(splits)])
    got, received = hvd.alltoall(send, splits=splits)
    want = torch.cat([torch.full(((k + r) % 3, 2), float(100 * k + r), device=device) for k in range(n)])
    assert got.device == device and torch.equal(got, want), (got, want)
    assert received.tolist() == [(k + r) % 3 for k in range(n)], received
    # On torch's own stream: hvd's work queues behind the kernel that filled z.
    hvd.set_gpu_stream(torch.cuda.current_stream().cuda_stream)
    z = torch.full((1 << 20,), float(r + 1), device=device) * 2
    hvd.allreduce_(z, op=hvd.Sum)
    assert torch.equal(z, torch.full_like(z, float(n * (n + 1)))), z[:3]
    hvd.set_gpu_stream(0)
    # On hvd's own stream again: a tensor still being written on torch's stream when it is
    # handed over. hvd's stream waits for that work on the GPU, and the caller does not
    # (it synchronized torch's stream before, holding the CPU at every gradient).
    w = torch.zeros(1 << 20, device=device)
    torch.cuda._sleep(100_000_000)  # tens of ms of GPU time queued ahead of the fill
    w.fill_(float(r + 1))
    handle = hvd.allreduce_async_(w, op=hvd.Sum, name="written_late")
    caller_went_on = not torch.cuda.current_stream().query()
    got = hvd.synchronize(handle)
    assert torch.equal(got, torch.full_like(w, float(n * (n + 1) // 2))), got[:3]
    assert caller_went_on, "handing the tensor over waited for torch's stream"
    print("ok", hvd.gpu_operations_backend())
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
