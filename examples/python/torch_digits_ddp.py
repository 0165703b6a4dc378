"""torch_digits.py's training with PyTorch's own DistributedDataParallel (gloo), for
comparison: the same data, model, batches and seed. hvdrun gives each rank the variables
torch.distributed reads (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK):

    hvdrun -np 4 python examples/python/torch_digits_ddp.py --epochs 5
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist

from digits import batches, load, make_model, shard

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--batch-size", type=int, default=16, help="samples per rank per step")
parser.add_argument("--base-lr", type=float, default=0.025, help="learning rate of one rank; scaled by size")
parser.add_argument("--log-json", help="rank 0 writes every step's global loss and the step times here")
args = parser.parse_args()

dist.init_process_group("gloo", init_method="env://")
rank, size = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)

train_x, train_y, test_x, test_y = load()
model = torch.nn.parallel.DistributedDataParallel(make_model())  # broadcasts rank 0's weights
optimizer = torch.optim.SGD(model.parameters(), lr=args.base_lr * size, momentum=0.9)

log = {"ranks": size, "global_batch": args.batch_size * size, "losses": [], "step_seconds": []}
for epoch in range(args.epochs):
    losses = []
    for indices in batches(len(train_x), args.batch_size * size, epoch, rank, size):
        started = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(train_x[indices]), train_y[indices])
        loss.backward()  # DDP averages the gradients during the backward pass
        optimizer.step()
        log["step_seconds"].append(time.perf_counter() - started)
        log.setdefault("first_step_done_unix", time.time())  # launchers' start-up, compared in bench/
        losses.append(loss.detach())
    epoch_losses = torch.stack(losses)
    dist.all_reduce(epoch_losses)
    epoch_losses /= size
    log["losses"].extend(epoch_losses.tolist())
    mine = shard(len(test_x), rank, size)
    with torch.no_grad():
        logits = model(test_x[mine])
        summed = torch.stack([torch.nn.functional.cross_entropy(logits, test_y[mine], reduction="sum"),
                              (logits.argmax(1) == test_y[mine]).sum().float()])
    dist.all_reduce(summed)
    test_loss, correct = (summed / len(test_x)).tolist()
    if rank == 0:
        print(f"epoch {epoch + 1}: train loss {epoch_losses.mean():.4f}, test loss {test_loss:.4f}, "
              f"test accuracy {correct:.3f}", flush=True)

if rank == 0 and args.log_json:
    log["test_accuracy"] = correct
    with open(args.log_json, "w") as out:
        json.dump(log, out)
dist.destroy_process_group()
