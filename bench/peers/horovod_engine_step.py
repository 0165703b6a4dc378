"""bench/peers/horovod_engine_step.py: Horovod's side of bench/engine_perf.cc, the same step:
--tensors named float32 allreduces of --bytes each, submitted with allreduce_async_ and then
all synchronized; the same names every step. Rank 0 prints the line engine_perf prints:
  tensors bytes steps fusion_mb cycle_ms time_per_step_ms steps_per_s #wrong
Run with horovodrun (Gloo) in the Horovod venv (bench/run_engine_bench.sh does)."""
import argparse
import os
import statistics
import time

import horovod.torch as hvd
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--tensors", type=int, default=1000)
parser.add_argument("--bytes", type=int, default=4096)
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--warmup", type=int, default=3)
args = parser.parse_args()

hvd.init()
count = max(1, args.bytes // 4)
grads = [torch.zeros(count) for _ in range(args.tensors)]
names = [f"grad.{t}" for t in range(args.tensors)]
times, wrong = [], 0
want = float(hvd.size() * (hvd.size() + 1) // 2)
for step in range(args.warmup + args.steps):
    for g in grads:
        g.fill_(hvd.rank() + 1)
    t0 = time.perf_counter()
    handles = [hvd.allreduce_async_(g, name=n, op=hvd.Sum) for g, n in zip(grads, names)]
    for h in handles:
        hvd.synchronize(h)
    ms = (time.perf_counter() - t0) * 1000
    wrong += sum(1 for g in grads if g[-1].item() != want)
    if step >= args.warmup:
        times.append(ms)
if hvd.rank() == 0:
    m = statistics.median(times)
    fusion = float(os.environ.get("HOROVOD_FUSION_THRESHOLD", 64 * 1024 * 1024)) / 1048576
    cycle = float(os.environ.get("HOROVOD_CYCLE_TIME", 1))
    print(f"{args.tensors:8d} {args.bytes:8d} {args.steps:6d} {fusion:9.0f} {cycle:8.2f} {m:16.3f} {1000 / m:11.1f} {wrong:6d}")
hvd.shutdown()
