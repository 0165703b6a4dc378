"""Rank side of test_elastic.py's growing job (hvdrun --host-discovery-script): training with
hvd.elastic.run and a TorchState committed every batch. Worker 0 rewrites the file the
discovery script prints ($DISCOVERY_FILE) at batch 5 to give this machine 4 slots; hvdrun
starts two more ranks, the running ones leave for the new world at their next commit
(HostsUpdatedInterrupt), and all four finish every batch with the same model."""

import os
import time

import torch

import hvd.torch as hvd

BATCHES = 60
hvd.init()
worker = int(os.environ["HVD_ELASTIC_WORKER"])
torch.manual_seed(worker)  # the new ranks start different: the sync must make them rank 0's

model = torch.nn.Linear(4, 1)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                     named_parameters=model.named_parameters())
state = hvd.elastic.TorchState(model, optimizer, batch=0)
resets = []
state.register_reset_callbacks([lambda: resets.append((hvd.rank(), hvd.size()))])
starts = []


@hvd.elastic.run
def train(state):
    starts.append(state.batch)
    while state.batch < BATCHES:
        if worker == 0 and state.batch == 5 and hvd.size() == 2:
            with open(os.environ["DISCOVERY_FILE"], "w") as f:
                f.write("localhost:4\n")
        x = torch.full((2, 4), float(state.batch + hvd.rank()))
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        state.batch += 1
        state.commit()
        time.sleep(0.05)


train(state)
weights = hvd.allgather(model.weight.detach().reshape(1, -1))
assert all(torch.equal(weights[0], w) for w in weights), "the ranks hold different models"
print(f"ok worker={worker} rank={hvd.rank()} size={hvd.size()} resets={resets} starts={starts}", flush=True)
