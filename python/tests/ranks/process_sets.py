"""Process sets on 4 ranks (Horovod's API): evens {0, 2} given to init, odds {1, 3} and a
trio {0, 1, 2} added after it; every collective in each set with NumPy and torch, against
values every rank can compute; a model trained with DistributedOptimizer over the evens
only; the refusals; a set removed. Prints "ok" on success."""

import sys

import numpy as np
import torch

import hvd.torch as hvd
from expect import expect_raises


def members_sum(ranks):
    return float(sum(r + 1 for r in ranks))


def main():
    evens = hvd.ProcessSet([2, 0])
    hvd.init(process_sets=[evens])
    r = hvd.rank()
    assert hvd.size() == 4, "needs 4 ranks"
    assert evens.process_set_id == 1 and evens.ranks == [0, 2], evens
    assert hvd.global_process_set.ranks == [0, 1, 2, 3] and hvd.global_process_set.process_set_id == 0
    odds = hvd.add_process_set([1, 3])
    trio = hvd.add_process_set(hvd.ProcessSet([0, 1, 2]))
    assert (odds.process_set_id, trio.process_set_id) == (2, 3)
    mine = evens if r % 2 == 0 else odds
    assert mine.included() and mine.size() == 2 and mine.rank() == r // 2
    other = odds if mine is evens else evens
    assert not other.included()
    expect_raises(hvd.HvdUsageError, f"rank {r} is not in process set", other.rank)

    # NumPy: allreduce (sum and the default average), allgather, broadcast from a job rank.
    x = np.full(3, float(r + 1))
    assert np.array_equal(hvd.allreduce(x, op=hvd.Sum, process_set=mine), np.full(3, members_sum(mine.ranks)))
    assert np.array_equal(hvd.allreduce(x, process_set=mine), np.full(3, members_sum(mine.ranks) / 2))
    gathered = hvd.allgather(np.array([r], dtype=np.int32), process_set=mine)
    assert gathered.tolist() == mine.ranks, gathered
    b = np.array([float(r)])
    hvd.broadcast_(b, root_rank=mine.ranks[-1], process_set=mine)
    assert b[0] == mine.ranks[-1], b
    assert hvd.broadcast_object({"from": r}, root_rank=mine.ranks[0], process_set=mine) == {"from": mine.ranks[0]}
    # In place, named and async, in two sets at once on ranks 0 and 2 (evens and trio).
    handles = [hvd.allreduce_async_(np.full(2, float(r + 1)), name="together", op=hvd.Sum, process_set=mine)]
    if trio.included():
        handles.append(hvd.allreduce_async_(np.full(2, float(r + 1)), name="together", op=hvd.Sum, process_set=trio))
    sums = [hvd.synchronize(h)[0] for h in handles]
    assert sums == [members_sum(mine.ranks)] + ([members_sum(trio.ranks)] if trio.included() else []), sums
    y = np.full(2, float(r))
    hvd.allreduce_(y, op=hvd.Max, process_set=mine)
    assert y[0] == max(mine.ranks), y

    # torch in the trio: reducescatter (5 rows over 3), alltoall, autograd through allreduce.
    if trio.included():
        t = torch.arange(10, dtype=torch.float32).reshape(5, 2) + r
        part = hvd.reducescatter(t, op=hvd.Sum, process_set=trio)
        whole = sum(torch.arange(10, dtype=torch.float32).reshape(5, 2) + k for k in trio.ranks)
        first = [0, 2, 4][trio.rank()]
        assert torch.equal(part, whole[first:first + part.shape[0]]), (part, whole)
        send = torch.tensor([10 * r + d for d in range(3)], dtype=torch.int64)
        got = hvd.alltoall(send, process_set=trio)
        assert got.tolist() == [10 * k + trio.rank() for k in trio.ranks], got
        w = torch.ones(3, requires_grad=True)
        (hvd.allreduce(w * (r + 1), op=hvd.Sum, process_set=trio) ** 2).sum().backward()
        # The output's gradient 2 w S (S: the trio's sum of k + 1) summed over the trio's 3
        # ranks by the backward allreduce, times this rank's factor r + 1.
        want = 2 * members_sum(trio.ranks) * 3 * (r + 1)
        assert torch.allclose(w.grad, torch.full((3,), want)), (w.grad, want)
        hvd.barrier(process_set=trio)

    # DistributedOptimizer over the evens only: their models stay equal, and the odds train
    # on their own (their ranks' data differ from the evens').
    if evens.included():
        torch.manual_seed(3)
        model = torch.nn.Linear(4, 1)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       named_parameters=model.named_parameters(), process_set=evens)
        for step in range(3):
            opt.zero_grad()
            model(torch.full((2, 4), float(r + step))).sum().backward()
            opt.step()
        weights = hvd.allgather(model.weight.detach(), process_set=evens)
        assert torch.equal(weights[0], weights[1]), weights

    # Refusals: a set not added, a removed one, a root outside the set, a repeat.
    expect_raises(hvd.HvdUsageError, "has not been added", lambda: hvd.allreduce(x, process_set=hvd.ProcessSet([0])))
    expect_raises(hvd.HvdUsageError, "is not in process set",
                  lambda: hvd.allreduce(x, process_set=other))
    expect_raises(hvd.HvdInvalidArgumentError, "is not in process set",
                  lambda: hvd.broadcast(x, root_rank=other.ranks[0], process_set=mine))
    expect_raises(hvd.HvdInvalidArgumentError, "has these ranks already", lambda: hvd.add_process_set([3, 1]))
    assert hvd.remove_process_set(odds) and odds.process_set_id is None
    assert not hvd.remove_process_set(odds) and not hvd.remove_process_set(hvd.global_process_set)
    expect_raises(hvd.HvdUsageError, "or was removed", lambda: hvd.allreduce(x, process_set=odds))
    assert hvd.allreduce(np.array([1.0]), op=hvd.Sum)[0] == 4.0  # the job's own still runs
    print("ok", flush=True)
    hvd.shutdown()
    assert evens.process_set_id is None and trio.process_set_id is None
    return 0


if __name__ == "__main__":
    sys.exit(main())
