"""Rank side of test_elastic.py: a script written for Horovod's elastic API runs on a fixed
set of ranks. run() starts every rank from rank 0's model, optimizer, attributes and
sampler; commit() and restore() keep and put back a copy; the ElasticSampler deals what is
left of an epoch evenly and skips what was recorded as processed."""

import torch

import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
torch.manual_seed(rank)  # every rank starts different: sync must make them rank 0's

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
dataset = list(range(10))
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=7)
state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=rank + 5, batch=0)


@hvd.elastic.run
def train(state, epochs):
    weights = hvd.allgather(state.model.weight.detach().reshape(1, -1))
    assert all(torch.equal(weights[0], w) for w in weights), "run() did not start every rank from rank 0's model"
    assert state.epoch == 5 and state.sampler.epoch == 0, (state.epoch, state.sampler.epoch)
    for epoch in range(state.epoch, state.epoch + epochs):
        state.sampler.set_epoch(epoch)
        seen = []
        for batch_idx, index in enumerate(state.sampler):
            seen.append(index)
            x = torch.full((1, 4), float(index))
            state.optimizer.zero_grad()
            state.model(x).sum().backward()
            state.optimizer.step()
            state.sampler.record_batch(batch_idx, 1)
            state.batch = batch_idx
        everyone = sorted(hvd.allgather_object(seen))
        everything = sorted(i for part in everyone for i in part)
        # 10 indices over the ranks: each rank as many, every index at least once.
        assert set(everything) == set(range(10)) and len(everything) == size * -(-10 // size), everything
        state.epoch = epoch + 1
        state.commit()
    return state.epoch


assert train(state, 2) == 7
# restore() puts back the last commit, after changes that were not committed.
committed = [p.detach().clone() for p in model.parameters()]
with torch.no_grad():
    for p in model.parameters():
        p.add_(1.0)
state.epoch = 99
state.restore()
assert state.epoch == 7 and all(torch.equal(a, b) for a, b in zip(committed, model.parameters())), "restore"
# Each rank's first two indices recorded as processed: sync() makes the union every rank's,
# and the rest is dealt again, evenly, and only the rest.
sampler.set_epoch(3)
mine = list(sampler)
sampler.record_batch(0, 2)
state.sync()
processed = set().union(*hvd.allgather_object(set(mine[:2])))
assert sampler.state_dict()["processed_indices"] == processed, sampler.state_dict()
rest = list(sampler)
assert not set(rest) & processed and len(rest) == -(-(10 - len(processed)) // size), (rest, processed)
print("ok")
