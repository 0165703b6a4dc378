"""A small Hugging Face Accelerate training loop on CPU, as a user runs it under hvdrun:
Accelerate finds the world from the variables hvdrun exports (WORLD_SIZE, RANK, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT). hvd is not imported.

    hvdrun -np 2 python accelerate_train.py

Prints, on every rank: who Accelerate says it is, and the loss of the trained model over
the whole dataset (the same on every rank when the gradients were averaged)."""

import socket

import torch
from accelerate import Accelerator
from regression_data import dataset
from torch.utils.data import DataLoader


def main():
    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    data = dataset()
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, DataLoader(data, batch_size=16, shuffle=False))
    for _ in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
            optimizer.step()
    with torch.no_grad():
        x, y = data.tensors
        loss = torch.nn.functional.mse_loss(accelerator.unwrap_model(model)(x), y).item()
    state = accelerator.state
    print(f"process_index={state.process_index} local_process_index={state.local_process_index} "
          f"num_processes={state.num_processes} distributed_type={state.distributed_type.value} "
          f"host={socket.gethostname()} loss={loss!r}", flush=True)
    accelerator.end_training()


if __name__ == "__main__":
    main()
