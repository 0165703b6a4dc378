"""Rank side of test_horovod_dropin.py: what a program written for `horovod.torch` meets in
hvd.torch, each case checked against Horovod's documented behaviour (its Python source is
the specification: exception types, argument names and orders, dtypes).

    horovod_dropin.py torch      the cases below, on two or more ranks; prints each
                                 case's name when it held, then `ok`
    horovod_dropin.py diverged   one rank raises inside a sequence of collectives and the
                                 other does not; both go on, shut down and init again
                                 (as a test file's next test does); prints what each call
                                 raised and how long it took, then `ok`
    horovod_dropin.py abandoned  rank 0 shuts down and inits again; rank 1 never does:
                                 rank 0 prints what its init raised and when, then `ok`
    horovod_dropin.py keras      hvd.keras and hvd.tensorflow with Horovod's signatures,
                                 callbacks and compression base class; prints `ok`
    horovod_dropin.py settings D Horovod's settings, run with HOROVOD_TIMELINE=DYNAMIC and
                                 HOROVOD_CPU_OPERATIONS=gloo: init(process_sets="dynamic"),
                                 an allreduce, a timeline started into directory D; `ok`
"""

import os

import sys
import time
import warnings

import numpy as np
import torch

import hvd.torch as hvd

hvd.init(process_sets="dynamic" if sys.argv[1] == "settings" else None)
rank, size = hvd.rank(), hvd.size()
torch.set_num_threads(1)


def held(case):
    print(f"held: {case}", flush=True)


def raises(kinds, call):
    """call() raises one of kinds; returns the exception."""
    try:
        call()
    except kinds as error:
        return error
    raise AssertionError(f"{call} raised nothing")


def truncated_scaling(tensor, factor):
    """Horovod's scaling of a tensor by a factor: integers in float64, truncated toward zero
    back to their dtype; float16 in float32; other floats in their own precision."""
    if not tensor.is_floating_point():
        return (tensor.to(torch.float64) * factor).trunc().to(tensor.dtype)
    if tensor.dtype == torch.float16:
        return (tensor.to(torch.float32) * np.float32(factor)).to(torch.float16)
    return tensor * torch.tensor(factor, dtype=tensor.dtype)


def check_duplicate_names():
    # A name resubmitted while its first request is pending: ValueError at the call, as in
    # Horovod (and hvd's own HvdUsageError, a RuntimeError too).
    starts = {
        "allreduce": lambda t, n: hvd.allreduce_async(t, name=n),
        "allgather": lambda t, n: hvd.allgather_async(t, name=n),
        "broadcast": lambda t, n: hvd.broadcast_async(t, 0, name=n),
        "reducescatter": lambda t, n: hvd.reducescatter_async(t, name=n),
    }
    for kind, start in starts.items():
        # Each rank's own name stays pending until after the barrier, when the others submit
        # it: the second submission meets a pending first one however fast the ranks run.
        tensor = torch.ones(2 * size, 3)
        mine = start(tensor, f"duplicate.{kind}.{rank}")
        error = raises(ValueError, lambda: start(tensor, f"duplicate.{kind}.{rank}"))
        assert isinstance(error, hvd.HvdUsageError) and isinstance(error, RuntimeError), type(error).__mro__
        assert "submitted again before its first submission finished" in str(error), error
        hvd.barrier()
        others = [start(tensor, f"duplicate.{kind}.{r}") for r in range(size) if r != rank]
        for handle in [mine, *others]:
            hvd.synchronize(handle)
    held("a name resubmitted while pending raises ValueError")


def check_shape_mismatch():
    # Horovod's test of "same rank, different dimension": every rank must raise.
    raises(RuntimeError, lambda: hvd.allreduce(torch.ones([17 + rank] * 3)))
    raises(RuntimeError, lambda: hvd.allreduce(torch.ones([17, 23 * 57] if rank == 0 else [17, 23, 57])))
    held("an allreduce of different shapes raises RuntimeError on every rank")


def check_integer_scaling():
    factor = 0.8370727  # not a power of two: every integer product truncates
    for dtype in (torch.int32, torch.int64, torch.float16, torch.float32, torch.float64):
        base = torch.arange(-15.0, 15.0).repeat(size * 2, 1) * 7 + rank  # 2 rows for each rank
        tensor = base.to(dtype)
        everyone = [(base - rank + r).to(dtype) for r in range(size)]
        summed = sum(everyone[1:], everyone[0])
        pre = sum((truncated_scaling(t, factor) for t in everyone[1:]), truncated_scaling(everyone[0], factor))
        post = truncated_scaling(summed, factor)
        rows = slice(rank * 2, rank * 2 + 2)  # this rank's rows of a reducescatter
        got = {
            "allreduce prescale": (hvd.allreduce(tensor, op=hvd.Sum, prescale_factor=factor), pre),
            "allreduce postscale": (hvd.allreduce(tensor, op=hvd.Sum, postscale_factor=factor), post),
            "allreduce_ prescale": (hvd.allreduce_(tensor.clone(), op=hvd.Sum, prescale_factor=factor), pre),
            "grouped_allreduce postscale": (hvd.grouped_allreduce([tensor], op=hvd.Sum,
                                                                  postscale_factor=factor)[0], post),
            "reducescatter prescale": (hvd.reducescatter(tensor, op=hvd.Sum, prescale_factor=factor), pre[rows]),
            "reducescatter postscale": (hvd.reducescatter(tensor, op=hvd.Sum, postscale_factor=factor), post[rows]),
            "grouped_reducescatter prescale": (hvd.grouped_reducescatter([tensor, tensor], op=hvd.Sum,
                                                                         prescale_factor=factor)[1], pre[rows]),
            "grouped_reducescatter postscale": (hvd.grouped_reducescatter([tensor], op=hvd.Sum,
                                                                          postscale_factor=factor)[0], post[rows]),
        }
        for what, (result, expected) in got.items():
            assert result.dtype == dtype, f"{what} of {dtype} gave {result.dtype}"
            assert torch.equal(result, expected), f"{what} of {dtype}: {result} != {expected}"
    held("scale factors keep every dtype, integers scaled in float64 and truncated")


def check_alltoall_gradient_without_splits():
    tensor = torch.arange(float(2 * size)).requires_grad_()
    collected = hvd.alltoall(tensor)
    assert isinstance(collected, torch.Tensor) and collected.shape == (2 * size,), collected
    collected.backward(torch.ones(collected.shape))
    assert torch.equal(tensor.grad, torch.ones(2 * size)), tensor.grad
    held("alltoall without splits returns one tensor and carries its gradient")


def check_join_refuses_gathers_and_broadcasts():
    # Horovod: beside a joined rank only reductions run; an allgather or a broadcast raises
    # on the ranks still working, and join() returns the last rank to join everywhere.
    for case in ("allgather", "broadcast"):
        if rank == 0:
            last = hvd.join()
        else:
            tensor = torch.ones(17, 17, 17)
            call = (lambda: hvd.allgather(tensor)) if case == "allgather" else \
                (lambda: hvd.broadcast(tensor, 1, name="join.broadcast"))
            error = raises(RuntimeError, call)
            assert "only reductions run beside joined ranks" in str(error), error
            last = hvd.join(hvd.local_rank())
        assert last != 0, last
        assert hvd.allgather_object(last) == [last] * size
    held("an allgather or broadcast beside a joined rank raises RuntimeError, and join goes on")


def check_optimizer_state_without_gradients():
    class ModelNoGrad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor([1, 3], dtype=torch.int32), requires_grad=False)
            self.b = torch.nn.Parameter(torch.arange(4.0) + rank)

    model = ModelNoGrad()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, weight_decay=1e-6, momentum=0.9, nesterov=True)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    a, b = optimizer.param_groups[0]["params"]
    assert a.grad is None, a.grad  # requires no grad: none made up
    assert torch.equal(b.grad, torch.zeros(4)), b.grad
    assert torch.equal(hvd.broadcast(b.grad, root_rank=0), b.grad)
    assert torch.equal(b.detach(), torch.arange(4.0)), b  # root's, unmoved by the state's first step
    assert "momentum_buffer" in optimizer.state[b], optimizer.state
    held("broadcast_optimizer_state gives an optimizer without state its state and zero gradients")


def check_horovod_arguments():
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.fill_(rank)
    hvd.broadcast_parameters(list(model.parameters()), root_rank=0)  # tensors, not pairs
    assert torch.equal(model.weight, torch.zeros(2, 3)), model.weight
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0, model=model)
    sparse = torch.sparse_coo_tensor([[rank]], [1.0], (size,))
    gathered = hvd.sparse_allreduce_async(sparse, name="sparse", op=hvd.Sum, process_set=hvd.global_process_set)()
    assert torch.equal(gathered.to_dense(), torch.ones(size)), gathered
    from hvd.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
    from hvd.torch.mpi_ops import allreduce, synchronize  # noqa: F401

    assert HorovodInternalError is hvd.HvdError and issubclass(HostsUpdatedInterrupt, RuntimeError)
    held("Horovod's arguments and module paths are taken")


def check_step_after_synchronize_warns():
    x = torch.zeros((1, 1)).requires_grad_()
    model = torch.nn.Linear(1, 1)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    for skip in (True, False):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.synchronize()
            if skip:
                with optimizer.skip_synchronize():
                    optimizer.step()
            else:
                optimizer.step()
        messages = [str(w.message) for w in caught]
        assert len(messages) == (0 if skip else 1), messages
    assert "optimizer.step() called without optimizer.skip_synchronize()" in messages[0], messages
    held("step() after synchronize() without skip_synchronize() warns in Horovod's words")


def torch_cases():
    check_duplicate_names()
    check_shape_mismatch()
    check_integer_scaling()
    check_alltoall_gradient_without_splits()
    check_join_refuses_gathers_and_broadcasts()
    check_optimizer_state_without_gradients()
    check_horovod_arguments()
    check_step_after_synchronize_warns()


def timed(what, call):
    start = time.monotonic()
    try:
        call()
        outcome = "returned"
    except Exception as error:  # noqa: BLE001  printed for the test to read
        outcome = f"raised {type(error).__name__}: {error}"
    print(f"{what} {outcome} after {time.monotonic() - start:.1f} s", flush=True)


def diverged():
    # A test that fails on rank 0 before its in-test barrier: rank 0's tear-down barrier
    # meets rank 1's in-test one, and rank 1's tear-down barrier has no partner left, since
    # rank 0 has moved on to the next test, which starts by shutting down and initialising.
    hvd.allreduce(torch.ones(2), name="first")
    if rank == 1:
        timed("in-test barrier", hvd.barrier)
    timed("tear-down barrier", hvd.barrier)
    if rank == 0:
        hvd.shutdown()
    timed("init", hvd.init)
    timed("allreduce", lambda: hvd.allreduce(torch.ones(2), name="after"))
    summed = hvd.allreduce(torch.ones(2), op=hvd.Sum)
    print(f"sum {summed.tolist()}", flush=True)


def abandoned():
    if rank == 0:
        hvd.shutdown()
        timed("init", hvd.init)
    else:
        time.sleep(8)


def settings():
    raises(ValueError, lambda: hvd.init(process_sets="static"))
    assert torch.equal(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), float(size)))
    # DYNAMIC is Horovod's "no trace until start_timeline()": no file of that name.
    assert not [f for f in os.listdir(".") if f.startswith("DYNAMIC")], os.listdir(".")
    trace = os.path.join(sys.argv[2], "trace.json")
    hvd.start_timeline(trace)
    hvd.allreduce(torch.ones(3), name="traced")
    hvd.stop_timeline()
    if rank == 0:
        assert "traced" in open(trace).read()
    held("HOROVOD_TIMELINE=DYNAMIC waits for start_timeline; gloo runs on hvd's ring")


def keras_cases():
    import inspect

    import keras
    import tensorflow as tf

    import hvd.keras as hk
    import hvd.tensorflow as htf
    from hvd.tensorflow.compression import Compressor
    from hvd.tensorflow.keras.callbacks import BestModelCheckpoint  # noqa: F401

    # Horovod's horovod.keras signatures: a value, and allreduce's second positional the name.
    assert list(inspect.signature(hk.allreduce).parameters) == [
        "value", "name", "average", "prescale_factor", "postscale_factor", "op", "compression"]
    assert list(inspect.signature(hk.allgather).parameters) == ["value", "name"]
    assert list(inspect.signature(hk.broadcast).parameters) == ["value", "root_rank", "name"]
    assert float(hk.allreduce(np.array([float(rank)]), "keras.mean")[0]) == (size - 1) / 2
    assert hk.allgather([[rank]]).numpy().ravel().tolist() == list(range(size))
    assert float(hk.broadcast(float(rank + 5), 0)) == 5.0

    class Halves(Compressor):  # a compression of the user's own, on Horovod's base class
        @staticmethod
        def compress(tensor):
            return tensor / 2, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor * 2

    assert float(htf.allreduce(tf.constant([2.0]), op=htf.Sum, compression=Halves)[0]) == 2.0 * size

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    for w in model.weights:
        w.assign(tf.fill(w.shape, float(rank)))
    dense = model.layers[0]
    htf.broadcast_variables([dense.kernel], 0, htf.global_process_set, inplace=False)  # Horovod's positional order
    assert float(tf.reduce_max(tf.abs(dense.kernel))) == 0.0
    for w in model.weights:
        w.assign(tf.fill(w.shape, float(rank)))
    model.compile(optimizer="sgd", loss="mse")
    callback = hk.callbacks.BroadcastGlobalVariablesCallback(0, device="", local_variables=[dense.bias])
    callback.set_model(model)
    callback.on_train_begin()
    assert float(tf.reduce_max(tf.abs(dense.kernel))) == 0.0  # root's
    assert float(tf.reduce_min(dense.bias)) == float(rank)  # this rank's own, left out
    logs = {"loss": float(rank)}
    hk.callbacks.MetricAverageCallback(device="").on_epoch_end(0, logs)
    assert logs["loss"] == (size - 1) / 2, logs
    held("hvd.keras and hvd.tensorflow take Horovod's signatures, callbacks and Compressor")


{"torch": torch_cases, "keras": keras_cases, "diverged": diverged, "abandoned": abandoned,
 "settings": settings}[sys.argv[1]]()
print("ok", flush=True)
