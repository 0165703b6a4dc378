"""A small PyTorch Lightning module trained with Trainer(strategy="ddp") on CPU, as a user
runs it under hvdrun: Lightning finds the world itself, from the torchelastic variables
hvdrun exports (RANK, LOCAL_RANK, GROUP_RANK, LOCAL_WORLD_SIZE, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT). hvd is not imported.

    hvdrun -np 2 python lightning_train.py NUM_NODES DEVICES DIR [slurm]

With `slurm`, Lightning is told to read Slurm's variables (SLURMEnvironment) instead:
Lightning 1.x looked at Slurm's first, and so does a user who names the plugin, so the
variables of the srun step hvdrun starts must give every rank its place too.

Prints, on every rank: who Lightning says it is, and the loss of the trained model over
the whole dataset (the same on every rank when DDP kept the replicas in step)."""

import socket
import sys

import torch
import pytorch_lightning as pl
from pytorch_lightning.plugins.environments import SLURMEnvironment
from regression_data import dataset
from torch.utils.data import DataLoader


class Regression(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    num_nodes, devices, root = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    plugins = [SLURMEnvironment(auto_requeue=False)] if sys.argv[4:] == ["slurm"] else []
    torch.manual_seed(0)
    data = dataset()
    model = Regression()
    trainer = pl.Trainer(accelerator="cpu", strategy="ddp", num_nodes=num_nodes, devices=devices, max_epochs=3,
                         default_root_dir=root, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, plugins=plugins)
    trainer.fit(model, DataLoader(data, batch_size=16, shuffle=False))
    with torch.no_grad():
        x, y = data.tensors
        loss = torch.nn.functional.mse_loss(model.layer(x), y).item()
    environment = type(trainer.strategy.cluster_environment).__name__
    print(f"global_rank={trainer.global_rank} local_rank={trainer.local_rank} world_size={trainer.world_size} "
          f"node_rank={trainer.node_rank} host={socket.gethostname()} environment={environment} loss={loss!r}",
          flush=True)


if __name__ == "__main__":
    main()
