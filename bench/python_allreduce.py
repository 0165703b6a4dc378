"""bench/python_allreduce.py: in-place float32 allreduce (sum) of torch tensors from Python,
timed the way bench/collective_perf.cc times the C++ call, through one of:

    --framework hvd       hvd.torch.allreduce_ (this repo's package; ranks from hvdrun)
    --framework torch     torch.distributed.all_reduce, gloo (env:// variables from hvdrun)
    --framework horovod   horovod.torch.allreduce_ (Horovod 0.28.1; ranks from horovodrun)

--array numpy (with --framework hvd): NumPy float32 arrays through hvd.allreduce_ instead.
The timed loop calls the API itself from a function, as a training step's code would:
a wrapper function per call would add a Python frame that is the benchmark's, not the API's.

Rank 0 prints nccl-tests columns: size count type redop root time(us) algbw busbw #wrong,
busbw = algbw x 2(n-1)/n. As collective_perf does: each size is run once and checked
(every rank gives rank+1), then timed over max(5, min(200, 256 MiB / (8 x size)))
iterations (or --iters), and the slowest rank's time is reported.
Prints; asserts nothing. bench/run_python_bench.sh runs every framework side by side.
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

    def slowest(seconds):
        return float(hvd.allreduce(torch.tensor([seconds], dtype=torch.float64), op=hvd.Max))

if rank == 0:
    print(f"# {args.framework}, {args.array}, {size} ranks")
    print(f"#{'size':>11} {'count':>12} {'type':>6} {'redop':>6} {'root':>5} {'time(us)':>10} {'algbw':>8} "
          f"{'busbw':>8} {'#wrong':>6}")
for nbytes in (int(s) for s in args.sizes.split(",")):
    count = max(1, nbytes // 4)
    if args.array == "numpy":
        t = np.full((count,), float(rank + 1), dtype=np.float32)
    else:
        t = torch.full((count,), float(rank + 1))
    allreduce(t, 1)
    wrong = int((t != size * (size + 1) / 2).sum())
    iters = args.iters or max(5, min(200, (256 << 20) // (nbytes * 8 + 1)))
    t[...] = 0
    allreduce(t, 1)  # lines the ranks up, as collective_perf's barrier
    started = time.perf_counter()
    allreduce(t, iters)
    seconds = slowest((time.perf_counter() - started) / iters)
    algbw = count * 4 / seconds / 1e9
    if rank == 0:
        print(f"{count * 4:>12} {count:>12} {'float':>6} {'sum':>6} {-1:>5} {seconds * 1e6:>10.2f} {algbw:>8.3f} "
              f"{algbw * 2 * (size - 1) / size:>8.3f} {wrong:>6}", flush=True)
if args.framework == "torch":
    # Without it, gloo's threads meet the interpreter's exit: "terminate called without an
    # active exception" on some rank, and that run's rows were lost.
    dist.barrier()
    dist.destroy_process_group()
