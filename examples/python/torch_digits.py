"""Data-parallel training of a small CNN with hvd.torch, as Horovod's tutorial teaches it:

    hvdrun -np 4 python examples/python/torch_digits.py --epochs 5

1. hvd.init(); 2. pin a GPU per local rank (when there are GPUs); 3. scale the learning
rate by the number of ranks (each rank trains on --batch-size samples a step, so a step sees
size x batch-size), or, with --use-adasum, keep one rank's; 4. wrap the optimizer in
hvd.DistributedOptimizer (op=hvd.Adasum with --use-adasum); 5. start every rank
from rank 0's weights and optimizer state; 6. average the metrics across ranks; 7. only
rank 0 writes checkpoints, and a restarted job resumes from rank 0's at the epoch it
broadcasts.
"""

import argparse
import json
import os
import time

import torch

import hvd.torch as hvd
from digits import batches, load, make_model, shard

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--batch-size", type=int, default=16, help="samples per rank per step")
parser.add_argument("--base-lr", type=float, default=0.025, help="learning rate of one rank; scaled by size")
parser.add_argument("--checkpoint", help="rank 0 saves here after every epoch; a restarted job resumes from it")
parser.add_argument("--log-json", help="rank 0 writes every step's global loss and the step times here")
parser.add_argument("--fp16-allreduce", action="store_true", help="send gradients as float16")
parser.add_argument("--use-adasum", action="store_true",
                    help="combine the ranks' steps by Adasum (hvd.Adasum) instead of averaging the gradients")
args = parser.parse_args()

hvd.init()
rank, size = hvd.rank(), hvd.size()
device = torch.device("cpu")
if torch.cuda.is_available():
    # Horovod's choice: the GPU at the local rank (hvdrun shows each rank its node's GPUs of the
    # job in local-rank order). Modulo the count: srun --gpus-per-task shows a rank its own alone.
    device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(device)
torch.set_num_threads(1)  # ranks share the host's cores

train_x, train_y, test_x, test_y = load()
model = make_model().to(device)
# Averaged gradients of size x batch-size samples take a step size times one rank's; Adasum
# does not grow the step with the rank count, so it keeps one rank's learning rate.
lr_scaler = 1 if args.use_adasum else size
optimizer = torch.optim.SGD(model.parameters(), lr=args.base_lr * lr_scaler, momentum=0.9)

optimizer = hvd.DistributedOptimizer(
    optimizer, named_parameters=model.named_parameters(),
    compression=hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none,
    op=hvd.Adasum if args.use_adasum else hvd.Average)

# Resume: rank 0 reads the checkpoint, every rank learns the epoch to start from and
# starts from rank 0's weights and optimizer state (momentum included).
first_epoch = 0
if rank == 0 and args.checkpoint and os.path.exists(args.checkpoint):
    saved = torch.load(args.checkpoint, map_location=device)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    first_epoch = saved["epoch"] + 1
first_epoch = hvd.broadcast_object(first_epoch, root_rank=0, name="first_epoch")
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)

log = {"ranks": size, "global_batch": args.batch_size * size, "first_epoch": first_epoch, "losses": [],
       "step_seconds": []}
for epoch in range(first_epoch, args.epochs):
    model.train()
    losses = []
    for indices in batches(len(train_x), args.batch_size * size, epoch, rank, size):
        started = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(train_x[indices].to(device)), train_y[indices].to(device))
        loss.backward()
        optimizer.step()
        log["step_seconds"].append(time.perf_counter() - started)
        losses.append(loss.detach())
    # Each rank's loss is its share's mean; the average over ranks is the global batch's.
    epoch_losses = hvd.allreduce(torch.stack(losses), name=f"train_loss.{epoch}")
    log["losses"].extend(epoch_losses.tolist())

    model.eval()
    mine = shard(len(test_x), rank, size)
    with torch.no_grad():
        logits = model(test_x[mine].to(device))
        summed = torch.stack([torch.nn.functional.cross_entropy(logits, test_y[mine].to(device), reduction="sum"),
                              (logits.argmax(1) == test_y[mine].to(device)).sum().float()])
    test_loss, correct = (hvd.allreduce(summed, op=hvd.Sum, name=f"test.{epoch}") / len(test_x)).tolist()
    if rank == 0:
        print(f"epoch {epoch + 1}: train loss {epoch_losses.mean():.4f}, test loss {test_loss:.4f}, "
              f"test accuracy {correct:.3f}", flush=True)
        if args.checkpoint:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                       args.checkpoint + ".tmp")
            os.replace(args.checkpoint + ".tmp", args.checkpoint)  # a crash never leaves half a checkpoint

if rank == 0 and args.log_json:
    log["test_accuracy"] = correct if args.epochs > first_epoch else None
    with open(args.log_json, "w") as out:
        json.dump(log, out)
