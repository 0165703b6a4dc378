"""Rank side of test_errors.py.

    failures.py mismatch     every rank submits tensor "grad" with a different length
    failures.py dtypes       rank 0 gives float32, the others float64 (same byte count):
                             an unnamed broadcast, an unnamed allgather, a named allgather
    failures.py rows         rank 0 gathers rows of 2, rank 1 rows of 3, then rows of (2, 3)
                             against (3, 2): an unnamed, a named and a torch allgather
    failures.py shapes       rank 0 gives a (2, 6) tensor, rank 1 a (3, 4) one (12 elements
                             each) to every allreduce and broadcast entry: NumPy and torch,
                             named and unnamed, blocking, async and in place; then (12,)
                             against (2, 6); then (2, 6) on both, which must go through
    failures.py interrupted  each rank waits on a named allreduce no other rank submits and
                             sends itself SIGINT after 1 s; prints how long until
                             KeyboardInterrupt, meets the others in a barrier, then exits
                             (shutting down with it pending)
    failures.py blocked      rank 0 makes each blocking unnamed call (allreduce, in place,
                             torch in place, broadcast, allgather, barrier) while rank 1
                             sleeps, and sends itself SIGINT 0.5 s into each; prints how
                             long until KeyboardInterrupt
    failures.py killed V     allreduces in a loop; rank V SIGKILLs itself at step 3 (the
                             survivors ignore hvdrun's SIGTERM, so what they raise is seen)
    failures.py forked       rank 0 forks a child (as os.fork, a fork-started worker) that
                             prints the rank and size it sees, makes an unnamed allreduce, a
                             named one, a barrier and an init (each prints raised or
                             returned), and exits with sys.exit (its
                             atexit handlers run); then every rank allreduces three times and
                             prints the sums (rank 0 first prints the child's exit code)
    failures.py spawned W    rank 0 (W=0) or every rank (W=all) starts a worker with the spawn
                             start method, which runs this script's top level again, hvd.init()
                             included, and prints "worker exit <code>"; then the sums as above
Each rank prints `raised <ExceptionClass>: <message>` for what it caught, then `ok`.
"""

import os
import signal
import sys
import threading
import time

import numpy as np

import hvd

hvd.init()
rank = hvd.rank()
mode = sys.argv[1]


def print_sums():
    """Three allreduces every rank makes: 3 6 9 on two ranks unless some call went astray."""
    sums = [hvd.allreduce(np.full(4, (rank + 1) * step, dtype=np.float32), op=hvd.Sum)[0] for step in (1, 2, 3)]
    print("sums " + " ".join(f"{s:g}" for s in sums), flush=True)


def report(error):
    print(f"raised {type(error).__name__}: {error}", flush=True)
    print(f"is HvdError: {isinstance(error, hvd.HvdError)}", flush=True)


if mode == "mismatch":
    try:
        hvd.synchronize(hvd.allreduce_async(np.ones(4 + rank, dtype=np.float32), name="grad"))
    except hvd.HvdError as error:
        report(error)
elif mode == "dtypes":
    dtype = np.float32 if rank == 0 else np.float64
    count = 4 if rank == 0 else 2  # 16 bytes on every rank
    for call in (lambda: hvd.broadcast(np.ones(count, dtype=dtype), root_rank=0),
                 lambda: hvd.allgather(np.ones(count, dtype=dtype)),
                 lambda: hvd.allgather(np.ones(count, dtype=dtype), name="feature")):
        try:
            got = call()
            print(f"returned {got.dtype} {got.shape}", flush=True)
        except hvd.HvdError as error:
            report(error)
elif mode == "rows":
    import torch

    shape = (2, 2) if rank == 0 else (2, 3)  # 4 and 6 elements: whole rows of 2 on rank 0
    square = (1, 2, 3) if rank == 0 else (1, 3, 2)  # the same row size, not the same rows
    for call in (lambda: hvd.allgather(np.ones(shape, dtype=np.float32)),
                 lambda: hvd.allgather(np.ones(shape, dtype=np.float32), name="rows"),
                 lambda: hvd.allgather(torch.ones(shape)),
                 lambda: hvd.allgather(np.ones(square, dtype=np.float32), name="square")):
        try:
            got = call()
            print(f"returned {tuple(got.shape)}", flush=True)
        except hvd.HvdError as error:
            report(error)
elif mode == "shapes":
    import torch

    mine = (2, 6) if rank == 0 else (3, 4)

    def np_in_place():
        x = np.ones(mine, dtype=np.float32)
        return hvd.allreduce_(x)

    def torch_in_place():
        x = torch.ones(mine)
        return hvd.allreduce_(x)

    def torch_async_in_place():
        x = torch.ones(mine)
        return hvd.synchronize(hvd.allreduce_async_(x, name="grad.async_"))

    calls = [lambda: hvd.allreduce(np.ones(mine, dtype=np.float32)),
             lambda: hvd.allreduce(np.ones(mine, dtype=np.float32), name="grad.np"),
             np_in_place,
             lambda: hvd.allreduce(torch.ones(mine)),
             lambda: hvd.allreduce(torch.ones(mine), name="grad.torch"),
             torch_in_place,
             torch_async_in_place,
             lambda: hvd.broadcast(np.ones(mine, dtype=np.float32), root_rank=0),
             lambda: hvd.broadcast(torch.ones(mine), root_rank=0, name="weights"),
             lambda: hvd.allreduce(np.ones((12,) if rank == 0 else (2, 6), dtype=np.float32), name="flat"),
             lambda: hvd.allreduce(np.ones((2, 6), dtype=np.float32), op=hvd.Sum, name="same")]
    for call in calls:
        try:
            got = call()
            print(f"returned {tuple(got.shape)} {float(got.sum()):g}", flush=True)
        except hvd.HvdError as error:
            report(error)
elif mode == "interrupted":
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    try:
        hvd.allreduce(np.ones(4, dtype=np.float32), name=f"only.{rank}")
    except KeyboardInterrupt:
        print(f"interrupted after {time.monotonic() - started:.1f} s", flush=True)
    # Until every rank was interrupted: a rank that started late (a loaded machine) would
    # otherwise see its peer's shutdown (HvdPeerError) before its own SIGINT came.
    hvd.barrier()
elif mode == "blocked":
    import torch

    if rank == 0:
        calls = {"allreduce": lambda: hvd.allreduce(np.ones(4, dtype=np.float32)),
                 "allreduce_": lambda: hvd.allreduce_(np.ones(4, dtype=np.float32)),
                 "torch allreduce_": lambda: hvd.allreduce_(torch.ones(4)),
                 "broadcast": lambda: hvd.broadcast(np.ones(4), 1),
                 "allgather": lambda: hvd.allgather(np.ones(4)),
                 "barrier": hvd.barrier}
        for what, call in calls.items():
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
            started = time.monotonic()
            try:
                call()
                print(f"{what} returned", flush=True)
            except KeyboardInterrupt:
                print(f"{what} interrupted after {time.monotonic() - started:.1f} s", flush=True)
    else:
        time.sleep(8)
elif mode == "killed":
    victim = int(sys.argv[2])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    started = time.monotonic()
    try:
        for step in range(1000000):
            if rank == victim and step == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            hvd.allreduce(np.ones(1024, dtype=np.float32), name=f"step.{step}")
    except hvd.HvdError as error:
        report(error)
        print(f"after {time.monotonic() - started:.1f} s", flush=True)
elif mode == "forked":
    hvd.allreduce(np.ones(4, dtype=np.float32))
    if rank == 0:
        child = os.fork()
        if child == 0:
            print(f"child rank {hvd.rank()} size {hvd.size()}", flush=True)
            for call in (lambda: hvd.allreduce(np.full(4, 100, dtype=np.float32)),
                         lambda: hvd.synchronize(hvd.allreduce_async(np.ones(4, dtype=np.float32), name="side")),
                         hvd.barrier, hvd.init):
                try:
                    call()
                    print("child call returned", flush=True)
                except hvd.HvdError as error:
                    print(f"child raised {type(error).__name__}: {error}", flush=True)
            sys.exit(0)
        _, status = os.waitpid(child, 0)
        print(f"child exit {os.waitstatus_to_exitcode(status)}", flush=True)
    print_sums()
elif mode == "spawned":
    import multiprocessing

    if sys.argv[2] == "all" or rank == 0:
        worker = multiprocessing.get_context("spawn").Process(target=print, args=("worker ran",))
        worker.start()
        worker.join(60)
        print(f"worker exit {worker.exitcode}", flush=True)
    print_sums()
print("ok", flush=True)
