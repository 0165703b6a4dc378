"""bench/python_allreduce.py: in-place float32 allreduce (sum) of torch tensors from Python,
timed the way bench/collective_perf.cc times the C++ call, through one of:

    --framework hvd       hvd.torch.allreduce_ (this repo's package; ranks from hvdrun)
    --framework torch     torch.distributed.all_reduce, gloo (env:// variables from hvdrun)
    --framework horovod   horovod.torch.allreduce_ (Horovod 0.28.1; ranks from horovodrun)

--array numpy (with --framework hvd): NumPy float32 arrays through hvd.allreduce_ instead.
--op reducescatter or alltoall times those instead (hvd's and Horovod's reducescatter and
alltoall, torch.distributed's reduce_scatter_tensor and all_to_all_single), each rank's
tensor cut into size() equal parts; --op adasum the allreduce with op=Adasum (hvd's and
Horovod's; torch.distributed has none). A framework that has no such call says so and prints
no rows.
The timed loop calls the API itself from a function, as a training step's code would:
a wrapper function per call would add a Python frame that is the benchmark's, not the API's.

Rank 0 prints nccl-tests columns: size count type redop root time(us) algbw busbw #wrong,
busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for the others. As collective_perf does:
each size is run once and checked (every rank gives rank+1), then timed over
max(5, min(200, 256 MiB / (8 x size))) iterations (or --iters), and the slowest rank's time
is reported. Prints; asserts nothing. bench/run_python_bench.sh runs every framework side
by side.
"""

import argparse
import time

import numpy as np
import torch

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--framework", choices=["hvd", "torch", "horovod"], required=True)
parser.add_argument("--sizes", default="4,65536,1048576,16777216,67108864", help="bytes, comma-separated")
parser.add_argument("--iters", type=int, default=0, help="iterations per size (default: collective_perf's rule)")
parser.add_argument("--array", choices=["torch", "numpy"], default="torch", help="numpy: only with --framework hvd")
parser.add_argument("--op", choices=["allreduce", "reducescatter", "alltoall", "adasum"], default="allreduce")
args = parser.parse_args()
if args.array == "numpy" and args.framework != "hvd":
    parser.error("--array numpy is for --framework hvd")
torch.set_num_threads(1)

if args.framework == "torch":
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()

    def allreduce(t, iters, all_reduce=dist.all_reduce):
        for _ in range(iters):
            all_reduce(t)
        return t

    def reducescatter(t, iters, reduce_scatter=dist.reduce_scatter_tensor):
        out = torch.empty(t.numel() // size, dtype=t.dtype)
        for _ in range(iters):
            reduce_scatter(out, t)
        return out

    def alltoall(t, iters, all_to_all=dist.all_to_all_single):
        out = torch.empty_like(t)
        for _ in range(iters):
            all_to_all(out, t)
        return out

    def adasum(t, iters):
        raise ValueError("torch.distributed has no Adasum")

    def slowest(seconds):
        t = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t)
else:
    if args.framework == "hvd":
        if args.array == "numpy":
            import hvd
        else:
            import hvd.torch as hvd
    else:
        import horovod.torch as hvd
    hvd.init()
    rank, size = hvd.rank(), hvd.size()

    def allreduce(t, iters, allreduce_=hvd.allreduce_, op=hvd.Sum):
        for _ in range(iters):
            allreduce_(t, op=op)
        return t

    def reducescatter(t, iters, reducescatter=hvd.reducescatter, op=hvd.Sum):
        for _ in range(iters):
            out = reducescatter(t, op=op)
        return out

    def alltoall(t, iters, alltoall=hvd.alltoall):
        for _ in range(iters):
            out = alltoall(t)
        return out

    def adasum(t, iters, allreduce_=hvd.allreduce_, op=hvd.Adasum):
        for _ in range(iters):
            allreduce_(t, op=op)
        return t

    def slowest(seconds):
        return float(hvd.allreduce(torch.tensor([seconds], dtype=torch.float64), op=hvd.Max))

run = {"allreduce": allreduce, "reducescatter": reducescatter, "alltoall": alltoall, "adasum": adasum}[args.op]
reduces_whole = args.op in ("allreduce", "adasum")
parts = 1 if reduces_whole else size  # each rank's tensor in equal parts


def adasum_of_constants():
    """Adasum of the ranks' constant tensors rank + 1: parallel tensors combine to their
    mean, so the tree (pairs 2i, 2i+1 first off a power of two, as hvd folds) of means."""
    p = 1
    while p * 2 <= size:
        p *= 2
    extra = size - p
    level = [(2 * i + 1 + 2 * i + 2) / 2 for i in range(extra)] + [r + 1.0 for r in range(2 * extra, size)]
    while len(level) > 1:
        level = [(level[i] + level[i + 1]) / 2 for i in range(0, len(level), 2)]
    return level[0]


def wrong_in(result):
    """Elements that differ from what every rank giving rank + 1 must produce."""
    result = torch.as_tensor(result)
    if args.op == "alltoall":  # part k came from rank k
        want = torch.arange(1, size + 1, dtype=torch.float32).repeat_interleave(result.numel() // size)
        return int((result != want).sum())
    if args.op == "adasum":
        return int((result - adasum_of_constants()).abs().gt(1e-5).sum())
    return int((result != size * (size + 1) / 2).sum())


if rank == 0:
    print(f"# {args.framework}, {args.array}, {args.op}, {size} ranks")
    print(f"#{'size':>11} {'count':>12} {'type':>6} {'redop':>6} {'root':>5} {'time(us)':>10} {'algbw':>8} "
          f"{'busbw':>8} {'#wrong':>6}")
for nbytes in (int(s) for s in args.sizes.split(",")):
    count = max(parts, nbytes // 4 // parts * parts)
    if args.array == "numpy":
        t = np.full((count,), float(rank + 1), dtype=np.float32)
    else:
        t = torch.full((count,), float(rank + 1))
    try:
        wrong = wrong_in(run(t, 1))
    except (RuntimeError, ValueError) as error:  # a framework without the call (gloo's reduce-scatter)
        if rank == 0:
            print(f"# {args.framework} has no {args.op} here: {str(error).splitlines()[0]}", flush=True)
        break
    iters = args.iters or max(5, min(200, (256 << 20) // (nbytes * 8 + 1)))
    if reduces_whole:
        t[...] = 0
    run(t, 1)  # lines the ranks up, as collective_perf's barrier
    started = time.perf_counter()
    run(t, iters)
    seconds = slowest((time.perf_counter() - started) / iters)
    algbw = count * 4 / seconds / 1e9
    factor = 2 * (size - 1) / size if reduces_whole else (size - 1) / size
    redop = {"alltoall": "none", "adasum": "adasum"}.get(args.op, "sum")
    if rank == 0:
        print(f"{count * 4:>12} {count:>12} {'float':>6} {redop:>6} {-1:>5} "
              f"{seconds * 1e6:>10.2f} {algbw:>8.3f} {algbw * factor:>8.3f} {wrong:>6}", flush=True)
if args.framework == "torch":
    # Without it, gloo's threads meet the interpreter's exit: "terminate called without an
    # active exception" on some rank, and that run's rows were lost.
    dist.barrier()
    dist.destroy_process_group()
