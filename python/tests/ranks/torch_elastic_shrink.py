"""Rank side of test_elastic.py's elastic jobs (hvdrun --min-np): training with
hvd.elastic.run, a TorchState committed after every batch and a DistributedOptimizer.
ELASTIC_VICTIMS lists workers (first ranks) that kill themselves: "1@3" in the middle of
batch 3, "2@reset" in its first reset callback (the world re-formed, before the sync);
"2@stop3" freezes itself (SIGSTOP) there instead. The
others must notice, put back the last commit, re-form as a smaller world each time, and
finish every batch with the same model."""

import os
import signal

import torch

import hvd.torch as hvd

BATCHES = 8
hvd.init()
worker = int(os.environ["HVD_ELASTIC_WORKER"])
victims = dict(item.split("@") for item in os.environ.get("ELASTIC_VICTIMS", "").split(",") if item)
dies_at = victims.get(str(worker))
torch.manual_seed(hvd.rank())

model = torch.nn.Linear(4, 1)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                     named_parameters=model.named_parameters())
state = hvd.elastic.TorchState(model, optimizer, batch=0)
resets = []


def on_reset():
    if dies_at == "reset":
        os.kill(os.getpid(), signal.SIGKILL)
    resets.append((hvd.rank(), hvd.size()))


state.register_reset_callbacks([on_reset])
starts = []


@hvd.elastic.run
def train(state):
    starts.append(state.batch)
    while state.batch < BATCHES:
        if dies_at == str(state.batch):
            os.kill(os.getpid(), signal.SIGKILL)
        if dies_at == f"stop{state.batch}":
            os.kill(os.getpid(), signal.SIGSTOP)
        x = torch.full((2, 4), float(state.batch + worker))
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        state.batch += 1
        state.commit()


train(state)
weights = hvd.allgather(model.weight.detach().reshape(1, -1))
assert all(torch.equal(weights[0], w) for w in weights), "the ranks left hold different models"
print(f"ok worker={worker} rank={hvd.rank()} size={hvd.size()} resets={resets} starts={starts}", flush=True)
