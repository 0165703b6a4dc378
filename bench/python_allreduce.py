"""bench/python_allreduce.py: in-place float32 allreduce (sum) of torch tensors from Python,
timed the way bench/collective_perf.cc times the C++ call, through one of:

    --framework hvd       hvd.torch.allreduce_ (this repo's package; ranks from hvdrun)
    --framework torch     torch.distributed.all_reduce, gloo (env:// variables from hvdrun)
    --framework horovod   horovod.torch.allreduce_ (Horovod 0.28.1; ranks from horovodrun)

Rank 0 prints nccl-tests columns: size count type redop root time(us) algbw busbw #wrong,
busbw = algbw x 2(n-1)/n. As collective_perf does: each size is run once and checked
(every rank gives rank+1), then timed over max(5, min(200, 256 MiB / (8 x size)))
iterations (or --iters), and the slowest rank's time is reported.
Prints; asserts nothing. bench/run_python_bench.sh runs every framework side by side.
"""

import argparse
import time

import torch

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--framework", choices=["hvd", "torch", "horovod"], required=True)
parser.add_argument("--sizes", default="4,65536,1048576,16777216,67108864", help="bytes, comma-separated")
parser.add_argument("--iters", type=int, default=0, help="iterations per size (default: collective_perf's rule)")
args = parser.parse_args()
torch.set_num_threads(1)

if args.framework == "torch":
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()

    def allreduce(t):
        dist.all_reduce(t)

    def slowest(seconds):
        t = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t)
else:
    if args.framework == "hvd":
        import hvd.torch as hvd
    else:
        import horovod.torch as hvd
    hvd.init()
    rank, size = hvd.rank(), hvd.size()

    def allreduce(t):
        hvd.allreduce_(t, op=hvd.Sum)

    def slowest(seconds):
        return float(hvd.allreduce(torch.tensor([seconds], dtype=torch.float64), op=hvd.Max))

if rank == 0:
    print(f"# {args.framework}, {size} ranks")
    print(f"#{'size':>11} {'count':>12} {'type':>6} {'redop':>6} {'root':>5} {'time(us)':>10} {'algbw':>8} "
          f"{'busbw':>8} {'#wrong':>6}")
for nbytes in (int(s) for s in args.sizes.split(",")):
    count = max(1, nbytes // 4)
    t = torch.full((count,), float(rank + 1))
    allreduce(t)
    wrong = int((t != size * (size + 1) / 2).sum())
    iters = args.iters or max(5, min(200, (256 << 20) // (nbytes * 8 + 1)))
    t.zero_()
    allreduce(t)  # lines the ranks up, as collective_perf's barrier
    started = time.perf_counter()
    for _ in range(iters):
        allreduce(t)
    seconds = slowest((time.perf_counter() - started) / iters)
    algbw = count * 4 / seconds / 1e9
    if rank == 0:
        print(f"{count * 4:>12} {count:>12} {'float':>6} {'sum':>6} {-1:>5} {seconds * 1e6:>10.1f} {algbw:>8.3f} "
              f"{algbw * 2 * (size - 1) / size:>8.3f} {wrong:>6}", flush=True)
if args.framework == "torch":
    # Without it, gloo's threads meet the interpreter's exit: "terminate called without an
    # active exception" on some rank, and that run's rows were lost.
    dist.barrier()
    dist.destroy_process_group()
