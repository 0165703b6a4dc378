"""Rank side of the contention test: allreduces 256 KiB until every rank's calling thread is
held on one CPU (or 20 s pass), then forks a child the way multiprocessing's fork start method
(a DataLoader's workers) does, and prints "held <cpu> child <cpus>" ("held none ..." if never)."""

import multiprocessing
import os
import time

import numpy as np

import hvd


def report(queue):
    queue.put(sorted(os.sched_getaffinity(0)))


hvd.init()
data = np.ones(64 * 1024, np.float32)
deadline = time.monotonic() + 20
while True:
    for _ in range(20):
        hvd.allreduce_(data, op=hvd.Min)
    # Every rank stops in the same round: when all are held, or when any rank's time is up.
    flags = np.array([len(os.sched_getaffinity(0)) == 1, time.monotonic() < deadline], np.int32)
    hvd.allreduce_(flags, op=hvd.Min)
    if flags[0] == 1 or flags[1] == 0:
        break
mine = sorted(os.sched_getaffinity(0))
held = str(mine[0]) if len(mine) == 1 else "none"
context = multiprocessing.get_context("fork")
queue = context.Queue()
child = context.Process(target=report, args=(queue,))
child.start()
cpus = queue.get(timeout=30)
child.join()
print(f"held {held} child {','.join(map(str, cpus))}", flush=True)
hvd.shutdown()
