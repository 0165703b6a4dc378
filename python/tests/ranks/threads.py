"""Rank side of the threads test: 4 Python threads per rank each submit 50 named async
allreduces, in an order that differs between ranks, and synchronize them; another thread
does blocking unnamed calls meanwhile. Every result is checked."""

import random
import threading

import numpy as np
import torch

import hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
failures = []


def submitter(thread):
    try:
        names = [f"t{thread}.g{i}" for i in range(50)]
        random.Random(rank * 100 + thread).shuffle(names)
        handles = {}
        for name in names:
            i = int(name.split("g")[1])
            tensor = torch.full((i + 1,), float(rank + i))
            handles[name] = (hvd.allreduce_async(tensor, name=name, op=hvd.Sum), i)
        for name, (handle, i) in handles.items():
            got = hvd.synchronize(handle)
            want = float(sum(r + i for r in range(size)))
            if got.shape != (i + 1,) or not torch.all(got == want):
                failures.append(f"{name}: {got[:4]} != {want}")
    except Exception as error:  # reported below, on the main thread
        failures.append(f"thread {thread}: {error!r}")


threads = [threading.Thread(target=submitter, args=(t,)) for t in range(4)]
for t in threads:
    t.start()
# Meanwhile, blocking unnamed calls (matched by order, so from one thread only).
for step in range(20):
    got = hvd.allreduce(np.full(3, float(step)), op=hvd.Max)
    if not np.all(got == step):
        failures.append(f"blocking step {step}: {got}")
for t in threads:
    t.join()
assert not failures, failures
print("ok", flush=True)
