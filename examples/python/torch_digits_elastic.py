"""torch_digits.py as an elastic job (Horovod's elastic recipe): ranks that fail are left
behind and the others go on from their last commit, as a smaller world.

    hvdrun -np 4 --min-np 2 python examples/python/torch_digits_elastic.py --epochs 5

The training function runs under @hvd.elastic.run with a TorchState (model, optimizer, the
epoch and the samples of it done). Every --commit-every steps the state is committed; when
a peer dies, each rank puts back its last commit, the world re-forms without the dead rank,
a reset callback scales the learning rate to the new size, every rank takes rank 0's state,
and the epoch goes on from the first sample not yet done. To watch it happen, --crash-rank
R --crash-at-step N makes rank R (its first rank) SIGKILL itself at global step N.
"""

import argparse
import os
import signal

import torch

import hvd.torch as hvd
from digits import load, make_model, shard

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--batch-size", type=int, default=16, help="samples per rank per step")
parser.add_argument("--base-lr", type=float, default=0.025, help="learning rate of one rank; scaled by size")
parser.add_argument("--commit-every", type=int, default=5, help="steps between commits of the state")
parser.add_argument("--crash-rank", type=int, default=-1, help="this rank (its first rank) SIGKILLs itself...")
parser.add_argument("--crash-at-step", type=int, default=-1, help="...at this global step")
args = parser.parse_args()

hvd.init()
first_rank = int(os.environ.get("HVD_ELASTIC_WORKER", hvd.rank()))  # stays as the world re-forms
torch.set_num_threads(1)  # ranks share the host's cores
train_x, train_y, test_x, test_y = load()
model = make_model()
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=args.base_lr * hvd.size(), momentum=0.9),
                                     named_parameters=model.named_parameters())
state = hvd.elastic.TorchState(model, optimizer, epoch=0, samples=0, step=0)


def scale_learning_rate():
    for group in optimizer.param_groups:
        group["lr"] = args.base_lr * hvd.size()


state.register_reset_callbacks([scale_learning_rate])


def evaluate():
    rank, size = hvd.rank(), hvd.size()
    mine = shard(len(test_x), rank, size)
    with torch.no_grad():
        logits = model(test_x[mine])
        correct = (logits.argmax(1) == test_y[mine]).sum().float()
    return (hvd.allreduce(correct.reshape(1), op=hvd.Sum, name="test.correct") / len(test_x)).item()


@hvd.elastic.run
def train(state):
    while state.epoch < args.epochs:
        rank, size = hvd.rank(), hvd.size()
        global_batch = args.batch_size * size
        # The epoch's order is the same on every rank and in every world; what is left of it
        # is cut into global batches of this world's size.
        order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(state.epoch))
        left = order[state.samples:]
        for start in range(0, len(left) - global_batch + 1, global_batch):
            if first_rank == args.crash_rank and state.step == args.crash_at_step:
                os.kill(os.getpid(), signal.SIGKILL)
            indices = left[start:start + global_batch][rank::size]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(train_x[indices]), train_y[indices]).backward()
            optimizer.step()
            state.samples += global_batch
            state.step += 1
            if state.step % args.commit_every == 0:
                state.commit()
        accuracy = evaluate()
        if rank == 0:
            print(f"epoch {state.epoch + 1}: test accuracy {accuracy:.3f} on {size} rank(s)", flush=True)
        state.epoch, state.samples = state.epoch + 1, 0
        state.commit()
    return evaluate()


accuracy = train(state)
if hvd.rank() == 0:
    print(f"final test accuracy {accuracy:.3f} on {hvd.size()} rank(s), {state.step} steps", flush=True)
