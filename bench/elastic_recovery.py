"""Rank side of bench/elastic_bench.sh: how long a job takes to get going again after one of
its ranks dies. Every rank trains a small model (an allreduce of its gradients per step);
the rank whose first rank is VICTIM SIGKILLs itself at step 20, after writing the time to
$BENCH_DIR/killed. Each rank that then completes a step in the new world (or the new start)
writes the time to $BENCH_DIR/resumed.<pid>.

    hvd      under hvdrun --min-np: hvd.elastic.run re-forms the world of the ranks left
    restart  under hvdrun --max-restarts 1: every rank starts again (TORCHELASTIC_RESTART_COUNT)
    torchrun under torchrun --max-restarts 1, over gloo: every rank starts again
"""

import os
import signal
import sys
import time

import torch

MODE = sys.argv[1]
DIR = os.environ["BENCH_DIR"]
VICTIM = int(os.environ.get("VICTIM", "1"))
STEPS, KILL_AT = 40, 20


def note(name):
    with open(os.path.join(DIR, name), "w") as f:
        f.write(f"{time.time():.6f}\n")


model = torch.nn.Linear(256, 256)
first_start = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"

if MODE == "torchrun":
    import torch.distributed as dist

    dist.init_process_group("gloo")
    me = int(os.environ["RANK"])

    def allreduce_grads():
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
else:
    import hvd.torch as hvd

    hvd.init()
    me = int(os.environ.get("HVD_ELASTIC_WORKER", os.environ.get("HVD_RANK", "0")))

    def allreduce_grads():
        for i, p in enumerate(model.parameters()):
            hvd.allreduce_(p.grad, name=f"grad.{i}")

optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
x = torch.randn(32, 256)


def step(at, resumed):
    if me == VICTIM and at == KILL_AT and first_start:
        note("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    optimizer.zero_grad()
    model(x).sum().backward()
    allreduce_grads()
    optimizer.step()
    if resumed:
        note(f"resumed.{os.getpid()}")


if MODE == "hvd":
    state = hvd.elastic.TorchState(model, optimizer, step=0, resets=0)
    state.register_reset_callbacks([lambda: setattr(state, "resets", state.resets + 1)])

    @hvd.elastic.run
    def train(state):
        first = True
        while state.step < STEPS:
            step(state.step, first and state.resets > 0)
            first = False
            state.step += 1
            state.commit()

    train(state)
else:
    for at in range(STEPS):
        step(at, not first_start and at == 0)
