"""Rank side of test_tensorflow.py: hvd.tensorflow's collectives eager and in tf.function
against NumPy references, DistributedGradientTape against gradients replayed from every
rank, and the refusal under XLA."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import hvd.tensorflow as hvd  # noqa: E402
from adasum_reference import tree  # noqa: E402

hvd.init()
rank, size = hvd.rank(), hvd.size()
tf.config.threading.set_intra_op_parallelism_threads(1)


def values(r, shape=(3, 4)):
    return ((np.arange(int(np.prod(shape))) * 5 + r) % 3 + 1).reshape(shape)


stack = np.stack([values(r) for r in range(size)]).astype(np.float64)
want = {hvd.Sum: stack.sum(0), hvd.Min: stack.min(0), hvd.Max: stack.max(0), hvd.Product: stack.prod(0)}

graph_allreduce = tf.function(lambda t, op: hvd.allreduce(t, op=op))
for dtype in (tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.uint8, tf.int32, tf.int64):
    t = tf.constant(values(rank), dtype=dtype)
    for op, expected in want.items():
        for mode, fn in (("eager", hvd.allreduce), ("graph", graph_allreduce)):
            got = fn(t, op=op)
            assert got.dtype == dtype and got.shape == t.shape, (mode, dtype, op, got)
            assert np.allclose(got.numpy().astype(np.float64), expected), (mode, dtype, op, got)
    if dtype.is_floating:
        avg = hvd.allreduce(t)  # Average by default
        assert np.allclose(avg.numpy().astype(np.float64), stack.mean(0), rtol=1e-2), (dtype, avg)

# Broadcast and allgather, eager and in a graph; first dimensions differ across ranks.
x = tf.constant(values(rank), tf.float32)
assert np.array_equal(hvd.broadcast(x, size - 1).numpy(), values(size - 1))
assert np.array_equal(tf.function(lambda t: hvd.broadcast(t, 0))(x).numpy(), values(0))
mine = tf.fill([rank + 1, 2], float(rank))
want_gather = np.concatenate([np.full((r + 1, 2), float(r)) for r in range(size)])
assert np.array_equal(hvd.allgather(mine).numpy(), want_gather)
gathered = tf.function(lambda t: hvd.allgather(t), input_signature=[tf.TensorSpec([None, 2], tf.float32)])(mine)
assert np.array_equal(gathered.numpy(), want_gather)

# broadcast_variables: eager, and inside a tf.function.
v = tf.Variable(tf.fill([4], float(rank)))
hvd.broadcast_variables([v], root_rank=0)
assert np.all(v.numpy() == 0)
v.assign(tf.fill([4], float(rank)))
tf.function(lambda: hvd.broadcast_variables([v], root_rank=size - 1))()
assert np.all(v.numpy() == size - 1)
flag, code = tf.Variable([rank == 0, rank != 0]), tf.Variable(tf.fill([2], tf.constant(rank + 100, tf.int16)))
hvd.broadcast_variables([flag, code], root_rank=0)  # bool and int16 were refused
assert flag.numpy().tolist() == [True, False] and code.numpy().tolist() == [100, 100]
assert hvd.allreduce(tf.constant([rank == 0]), op=hvd.Max).numpy().tolist() == [True]

# DistributedGradientTape: the average of every rank's gradients, eager and in a graph.
w = tf.Variable([[1.0, -2.0], [0.5, 3.0]])
b = tf.Variable([0.1, 0.2])


def loss_of(r):
    inputs = tf.constant(values(r, (5, 2)), tf.float32)
    return tf.reduce_mean(tf.square(tf.matmul(inputs, w) + b))


reference = []
for r in range(size):
    with tf.GradientTape() as plain:
        loss = loss_of(r)
    reference.append([g.numpy() for g in plain.gradient(loss, [w, b])])
averaged = [sum(ref[i] for ref in reference) / size for i in range(2)]
with tf.GradientTape() as tape:
    loss = loss_of(rank)
grads = hvd.DistributedGradientTape(tape).gradient(loss, [w, b])
assert all(np.allclose(g.numpy(), a, rtol=1e-6) for g, a in zip(grads, averaged)), "eager tape"


@tf.function
def graph_step():
    with tf.GradientTape() as tape:
        loss = loss_of(rank)
    return hvd.DistributedGradientTape(tape).gradient(loss, [w, b])


for _ in range(3):  # the same names every step
    assert all(np.allclose(g.numpy(), a, rtol=1e-6) for g, a in zip(graph_step(), averaged)), "graph tape"

# op=hvd.Adasum: each variable's gradients combined by Adasum over the ranks, as Horovod's
# tape does for Keras and TensorFlow (no delta optimizer there).
with tf.GradientTape() as tape:
    loss = loss_of(rank)
grads = hvd.DistributedGradientTape(tape, op=hvd.Adasum).gradient(loss, [w, b])
for i, g in enumerate(grads):
    want = tree([ref[i].astype(np.float64).ravel() for ref in reference]).reshape(g.shape)
    assert np.allclose(g.numpy(), want, rtol=1e-5, atol=1e-6), f"Adasum tape, variable {i}: {g.numpy()} vs {want}"

# Horovod's other tape arguments: gradient_predivide_factor (1/f before the sum, f/size after
# it), sparse_as_dense, devices and fusion groups give the same average, eager and in a
# graph; a predivide factor with op=Sum is refused. Before, each raised TypeError.
horovod_options = {"gradient_predivide_factor": 4.0, "sparse_as_dense": True, "device_dense": "/gpu:0",
                   "num_groups": 1}
with tf.GradientTape() as tape:
    loss = loss_of(rank)
grads = hvd.DistributedGradientTape(tape, **horovod_options).gradient(loss, [w, b])
assert all(np.allclose(g.numpy(), a, rtol=1e-5) for g, a in zip(grads, averaged)), "eager tape, Horovod's options"


@tf.function
def predivided_step():
    with tf.GradientTape() as tape:
        loss = loss_of(rank)
    return hvd.DistributedGradientTape(tape, gradient_predivide_factor=4.0).gradient(loss, [w, b])


assert all(np.allclose(g.numpy(), a, rtol=1e-5) for g, a in zip(predivided_step(), averaged)), "graph, predivided"
try:  # op where hvd's earlier signature had it: Horovod's device_dense now, refused, not dropped
    hvd.DistributedGradientTape(tf.GradientTape(), hvd.Sum)
    raise SystemExit("an op given by position was taken for a device")
except TypeError as error:
    assert "give op= by name" in str(error), error
try:
    hvd.DistributedGradientTape(tf.GradientTape(), op=hvd.Sum, gradient_predivide_factor=2.0)
    raise SystemExit("gradient_predivide_factor with op=Sum was accepted")
except ValueError as error:
    assert "splits an average" in str(error), error

# reducescatter: this rank's rows of the reduction, eager and in a tf.function; Horovod's
# gradient gathers every rank's (rank r's loss weighs its rows by r + 1), as is for Average.
rows = 2 * size + 1
shares = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
first = sum(shares[:rank])
mine = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) + rank
total = sum(np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) + r for r in range(size))
assert np.allclose(hvd.reducescatter(mine, op=hvd.Sum).numpy(), total[first:first + shares[rank]]), "eager reducescatter"
graph = tf.function(lambda t: hvd.reducescatter(t, name="rs-graph"))(tf.constant(mine))
assert np.allclose(graph.numpy(), total[first:first + shares[rank]] / size), "graph reducescatter"
v = tf.Variable(mine)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(hvd.reducescatter(v) * (rank + 1))
row_weights = np.concatenate([np.full((shares[r], 2), r + 1.0) for r in range(size)])
assert np.allclose(tape.gradient(loss, v).numpy(), row_weights), "reducescatter gradient"
# grouped_reducescatter (Horovod's): two tensors of different shapes at once, eager, in a
# tf.function and through the tape; Sum's gradient is the gathered one times size().
wide = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) * (rank + 1)
wide_total = sum(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) * (r + 1) for r in range(size))
a, b = hvd.grouped_reducescatter([mine, wide], op=hvd.Sum)
assert np.allclose(a.numpy(), total[first:first + shares[rank]]), "eager grouped reducescatter"
assert np.allclose(b.numpy(), wide_total[first:first + shares[rank]]), "eager grouped reducescatter, second"
pair = tf.function(lambda x, y: hvd.grouped_reducescatter([x, y], name="grs-graph"))(tf.constant(mine), tf.constant(wide))
assert np.allclose(pair[1].numpy(), wide_total[first:first + shares[rank]] / size), "graph grouped reducescatter"
assert pair[1].shape[1:] == (3,), pair[1].shape
v, w = tf.Variable(mine), tf.Variable(wide)
with tf.GradientTape() as tape:
    a, b = hvd.grouped_reducescatter([v, w], op=hvd.Sum)
    loss = tf.reduce_sum(a * (rank + 1)) + tf.reduce_sum(b)
grad_v, grad_w = tape.gradient(loss, [v, w])
assert np.allclose(grad_v.numpy(), row_weights * size), "grouped reducescatter gradient"
assert np.allclose(grad_w.numpy(), np.full((rows, 3), float(size))), "grouped reducescatter gradient, second"
assert hvd.grouped_reducescatter([]) == []

# grouped_allgather (Horovod's): rank r gives r + 1 rows of 2 and 3 elements, eager, in a
# tf.function and through the tape (allgather's gradient: this rank's rows of the average).
pieces = [np.full((rank + 1, 2), float(rank), np.float32), np.full((rank + 1, 3), 10.0 + rank, np.float32)]
want = [np.concatenate([np.full((r + 1, k), base + r, np.float32) for r in range(size)]) for k, base in ((2, 0.0), (3, 10.0))]
for got, w in zip(hvd.grouped_allgather(pieces), want):
    assert np.array_equal(got.numpy(), w), "eager grouped allgather"
graph = tf.function(lambda x, y: hvd.grouped_allgather([x, y], name="gag-graph"))(*[tf.constant(p) for p in pieces])
assert all(np.array_equal(g.numpy(), w) for g, w in zip(graph, want)), "graph grouped allgather"
assert graph[1].shape[1:] == (3,), graph[1].shape
v = tf.Variable(pieces[0])
with tf.GradientTape() as tape:
    gathered = hvd.grouped_allgather([v])[0]
    loss = tf.reduce_sum(gathered * (rank + 1))
assert np.allclose(tape.gradient(loss, v).numpy(), np.full((rank + 1, 2), (size + 1) / 2)), "grouped allgather gradient"

# Horovod's graph-era identity ops, and broadcast_object_fn.
assert [int(op()) for op in (hvd.size_op, hvd.rank_op, hvd.local_size_op, hvd.local_rank_op, hvd.cross_size_op,
                             hvd.cross_rank_op)] == [size, rank, hvd.local_size(), hvd.local_rank(), hvd.cross_size(),
                                                     hvd.cross_rank()]
assert int(tf.function(lambda: hvd.rank_op() * 10)()) == rank * 10
try:
    hvd.size_op(process_set_id=1)
    raise AssertionError("a process set that was never added was taken")
except hvd.HvdInvalidArgumentError as error:
    assert "process set 1 does not exist" in str(error), error
try:
    hvd.process_set_included_op(process_set_id=7)
    raise AssertionError("process_set_included_op took a process set that was never added")
except hvd.HvdInvalidArgumentError as error:
    assert "process set 7 does not exist" in str(error), error
assert hvd.broadcast_object_fn(root_rank=size - 1)({"from": rank}) == {"from": size - 1}

# hvd.tensorflow.DistributedOptimizer on a Keras optimizer in a custom loop: apply_gradients
# averages rank r's gradient (r + 1) before SGD's step; a TensorFlow 1 optimizer is refused.
import keras  # noqa: E402

w = tf.Variable([1.0, 1.0])
opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.5))
opt.apply_gradients([(tf.constant([rank + 1.0, 2.0 * (rank + 1)]), w)])
mean = (size + 1) / 2
assert np.allclose(w.numpy(), [1.0 - 0.5 * mean, 1.0 - 0.5 * 2 * mean]), w.numpy()
try:
    hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
    raise AssertionError("a TensorFlow 1 optimizer was wrapped")
except hvd.HvdUsageError as error:
    assert "TensorFlow 1 optimizer" in str(error), error

# alltoall: rank r sends its first row to rank 0 and the rest to rank 1 (none to the rest),
# eager, in a tf.function and through the tape, where the gradient goes back the way the
# rows came (rank d weighs what it got by d + 1).
rows3 = np.arange(6, dtype=np.float32).reshape(3, 2) + 10 * rank
splits3 = [1, 2] + [0] * (size - 2) if size > 1 else [3]
out, received = hvd.alltoall(rows3, splits=splits3)
assert received.numpy().tolist() == [splits3[rank]] * size, received
assert np.allclose(out.numpy(), np.concatenate([(np.arange(6, dtype=np.float32).reshape(3, 2) + 10 * k)[
    sum(splits3[:rank]):sum(splits3[:rank + 1])] for k in range(size)]).reshape(-1, 2)), "eager alltoall"
even = tf.function(lambda t: hvd.alltoall(t, name="a2a-graph"))(tf.constant(np.arange(2.0 * size) + 100 * rank))
assert np.allclose(even.numpy(), [100 * k + 2 * rank + i for k in range(size) for i in range(2)]), "graph alltoall"
v = tf.Variable(rows3)
with tf.GradientTape() as tape:
    mine, _ = hvd.alltoall(v, splits=splits3)
    loss = tf.reduce_sum(mine * (rank + 1))
want = np.array([[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]) if size > 1 else np.ones((3, 2))
assert np.allclose(tape.gradient(loss, v).numpy(), want), "alltoall gradient"

# Horovod's join: rank 0 runs out of data first; the others' average, eager and in a
# tf.function, counts it as zero over the whole job's size.
if rank == 0:
    last = hvd.join()
else:
    ones = tf.ones([3], tf.float32)
    assert np.allclose(hvd.allreduce(ones).numpy(), (size - 1) / size), "eager allreduce beside a joined rank"
    graph = tf.function(lambda t: hvd.allreduce(t, name="beside-joined"))(ones)
    assert np.allclose(graph.numpy(), (size - 1) / size), "graph allreduce beside a joined rank"
    last = hvd.join()
assert last != 0 or size == 1, last

# Process sets: {0, 2} added on every rank; its members run the collectives and a
# DistributedGradientTape among themselves, eager and in a tf.function; rank 1 is refused.
# Named: the unnamed calls' names count the calls each rank made, and rank 0 made fewer
# (it joined above while the others reduced).
if size == 3:
    pair = hvd.add_process_set([0, 2])
    assert int(hvd.size_op(process_set_id=pair.process_set_id)) == 2
    assert int(hvd.process_set_included_op(pair.process_set_id)) == (0 if rank == 1 else 1)
    assert int(hvd.process_set_included_op()) == 1
    try:
        hvd.local_rank_op(process_set_id=pair.process_set_id)
        raise SystemExit("a process set's local rank op was taken")
    except hvd.HvdUsageError as error:
        assert "no local or cross ranks for a process set" in str(error), error
    if pair.included():
        assert int(hvd.rank_op(process_set_id=pair.process_set_id)) == rank // 2
        mine = tf.fill([2], float(rank + 1))
        summed = hvd.allreduce(mine, op=hvd.Sum, name="set-eager", process_set=pair)
        assert np.allclose(summed.numpy(), 4.0), "eager set allreduce"
        graph = tf.function(lambda t: hvd.allreduce(t, op=hvd.Sum, name="set-graph", process_set=pair))(mine)
        assert np.allclose(graph.numpy(), 4.0), "graph set allreduce"
        assert hvd.allgather(tf.constant([rank]), name="set-gather", process_set=pair).numpy().tolist() == [0, 2]
        assert hvd.broadcast(tf.constant([float(rank)]), 2, name="set-bcast", process_set=pair).numpy()[0] == 2.0
        part = hvd.reducescatter(tf.reshape(tf.range(6, dtype=tf.float32), [3, 2]) + rank, op=hvd.Sum,
                                 name="set-scatter", process_set=pair)
        assert np.allclose(part.numpy(), (np.arange(6).reshape(3, 2) * 2 + 2)[[0, 1] if rank == 0 else [2]]), part
        swapped = hvd.alltoall(tf.constant([10 * rank, 10 * rank + 1]), name="set-a2a", process_set=pair)
        assert swapped.numpy().tolist() == ([0, 20] if rank == 0 else [1, 21]), swapped
        w = tf.Variable(tf.ones([2]))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * (rank + 1))
        grad = hvd.DistributedGradientTape(tape, process_set=pair).gradient(loss, w)
        assert np.allclose(grad.numpy(), 2.0), grad  # the average of 1 and 3
        import keras

        weights = keras.Variable(np.zeros(2, dtype=np.float32))
        sgd = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), process_set=pair)
        sgd.apply([tf.fill([2], float(rank + 1))], [weights])
        assert np.allclose(np.asarray(weights.value), -2.0), weights  # minus the pair's average gradient
    else:
        try:
            hvd.allreduce(tf.ones([1]), name="set-outsider", process_set=pair)
            raise SystemExit("rank 1 ran an allreduce in a set it is not in")
        except hvd.HvdUsageError as error:
            assert "is not in process set" in str(error), error
    assert hvd.remove_process_set(pair)

# Horovod's PartialDistributedGradientTape and hvd.keras.PartialDistributedOptimizer: a local
# layer's gradients stay each rank's own, divided by the size unless scale_local_gradients is
# False; the others are averaged. Before, neither name existed.
import keras  # noqa: E402

import hvd.keras as hvd_keras  # noqa: E402

body_w = tf.Variable([[1.0, -2.0], [0.5, 3.0]])
body_b = tf.Variable([0.1, 0.2])
head = keras.layers.Dense(2, kernel_initializer="ones")
head.build((None, 2))


def partial_loss(r):
    inputs = tf.constant(values(r, (5, 2)), tf.float32)
    return tf.reduce_mean(tf.square(head(tf.matmul(inputs, body_w) + body_b)))


shared_and_local = [body_w, body_b] + head.trainable_weights
own = []
for r in range(size):
    with tf.GradientTape() as plain:
        loss = partial_loss(r)
    own.append([g.numpy() for g in plain.gradient(loss, shared_and_local)])
for scale in (True, False):
    with tf.GradientTape() as tape:
        loss = partial_loss(rank)
    partial = hvd.PartialDistributedGradientTape(tape, local_layers=head, scale_local_gradients=scale)
    grads = partial.gradient(loss, shared_and_local)
    for i, g in enumerate(grads):
        want_grad = sum(o[i] for o in own) / size if i < 2 else own[rank][i] / (size if scale else 1)
        assert np.allclose(g.numpy(), want_grad, rtol=1e-5), f"partial tape (scale {scale}), variable {i}"
try:
    hvd.PartialDistributedGradientTape(tf.GradientTape(), local_layers=[body_w])
    raise SystemExit("a variable as a local layer was taken")
except ValueError as error:
    assert "not a Keras layer" in str(error), error

start = [v.numpy().copy() for v in shared_and_local]
sgd = hvd_keras.PartialDistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), local_layers=[head])
sgd.apply([tf.constant(o) for o in own[rank]], shared_and_local)
for i, v in enumerate(shared_and_local):
    step = sum(o[i] for o in own) / size if i < 2 else own[rank][i] / size
    assert np.allclose(np.asarray(v.numpy()), start[i] - step, rtol=1e-5), f"partial optimizer, variable {i}"
    v.assign(start[i])

# Horovod's in-place broadcast_, Keras' reducescatter and load_model(custom_optimizers=), and
# broadcast_global_variables refused under TensorFlow 2 naming what to call (each was an
# AttributeError or a TypeError). Named: rank 0 made fewer unnamed calls (it joined above).
pair_of = [tf.Variable([float(rank), 1.0]), tf.Variable(float(rank) * 2)]
assert hvd.broadcast_(pair_of, root_rank=size - 1, name="in-place") is pair_of
assert pair_of[0].numpy().tolist() == [size - 1, 1.0] and float(pair_of[1].numpy()) == 2.0 * (size - 1)
one = tf.Variable([float(rank)])
assert hvd.broadcast_(one, 0, name="in-place-one") is one and one.numpy().tolist() == [0.0]
scattered = hvd_keras.reducescatter(tf.constant(np.arange(size * 2, dtype=np.float32).reshape(size, 2)), op=hvd.Sum,
                                     name="keras-scatter")
assert np.allclose(scattered.numpy(), np.arange(size * 2, dtype=np.float32).reshape(size, 2)[rank] * size)
for module in (hvd, hvd_keras):
    try:
        module.broadcast_global_variables(0)
        raise SystemExit("broadcast_global_variables did not refuse")
    except hvd.HvdUsageError as error:
        assert "hvd.broadcast_variables(model.variables, root_rank=0)" in str(error), error


class OwnSGD(keras.optimizers.SGD):
    pass


import tempfile  # noqa: E402

saved = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
saved.compile(optimizer=OwnSGD(learning_rate=0.5), loss="mse", jit_compile=False)
with tempfile.TemporaryDirectory() as directory:
    path = os.path.join(directory, f"model{rank}.keras")
    saved.save(path)
    loaded = hvd_keras.load_model(path, custom_optimizers=[OwnSGD])
    assert isinstance(loaded.optimizer, OwnSGD) and getattr(loaded.optimizer, "_hvd_distributed", False)
    assert float(loaded.optimizer.learning_rate) == 0.5
    try:
        hvd_keras.load_model(path, {"OwnSGD": OwnSGD})
        raise SystemExit("a dict as custom_optimizers was taken")
    except TypeError as error:
        assert "custom_objects=" in str(error), error

# Horovod's keyword arguments on the collectives: allreduce's and grouped_allreduce's and
# reducescatter's prescale_factor/postscale_factor (integers keep their type, products
# truncated), the device hints and ignore_name_scope (taken, changing nothing here); they
# were TypeErrors. (The scaled gradient: tensorflow_autograd.py.)
mine3 = tf.constant([float(rank + 1)] * 3)
scaled = hvd.allreduce(mine3, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25, device_dense="/gpu:0",
                       device_sparse="", ignore_name_scope=True, name="kw-allreduce")
assert np.allclose(scaled.numpy(), 0.5 * size * (size + 1) / 2), scaled
whole = hvd.allreduce(tf.constant([3, 5], tf.int32), op=hvd.Sum, prescale_factor=0.5, name="kw-int")
assert whole.dtype == tf.int32 and whole.numpy().tolist() == [size, 2 * size], whole
pair_scaled = hvd.grouped_allreduce([mine3, tf.constant([1.0])], op=hvd.Sum, prescale_factor=3.0, name="kw-group")
assert np.allclose(pair_scaled[1].numpy(), 3.0 * size), pair_scaled
rows = tf.constant(np.ones((size, 2), np.float32) * (rank + 1))
part = hvd.reducescatter(rows, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5, device_dense="",
                         compression=hvd.Compression.none, ignore_name_scope=False, name="kw-scatter")
assert np.allclose(part.numpy(), size * (size + 1) / 2), part
for call in (lambda: hvd.allgather(mine3, name="kw-gather", ignore_name_scope=True),
             lambda: hvd.broadcast(mine3, 0, name="kw-bcast", ignore_name_scope=True),
             lambda: hvd.alltoall(tf.constant([float(rank)] * size), name="kw-a2a", ignore_name_scope=True)):
    call()

# As many elements in different shapes: every rank raises naming both, eager and in a
# graph (rank 0 gives (size, 6), the others (6, size)); one shape on all ranks goes through.
mine_shape = (size, 6) if rank == 0 else (6, size)
for name, call in (("eager", lambda t: hvd.allreduce(t, name="shape-eager")),
                   ("graph", tf.function(lambda t: hvd.allreduce(t, name="shape-graph"))),
                   ("broadcast", lambda t: hvd.broadcast(t, 0, name="shape-bcast"))):
    try:
        call(tf.ones(mine_shape))
        raise SystemExit(f"{name}: shapes {(size, 6)} and {(6, size)} were reduced together")
    except Exception as error:  # a graph wraps what the op raised
        assert f"of shape {(size, 6)}" in str(error) and f"of shape {(6, size)}" in str(error), (name, str(error))
assert hvd.allreduce(tf.ones((size, 6)), op=hvd.Sum, name="shape-same").numpy().sum() == 6 * size * size

# Under XLA the runtime cannot be called: a clear error, not a crash.
try:
    tf.function(lambda t: hvd.allreduce(t), jit_compile=True)(x)
    raise SystemExit("allreduce under jit_compile=True did not raise")
except Exception as error:  # TensorFlow wraps what is raised while tracing
    assert "jit_compile=False" in str(error), str(error)
print("ok", flush=True)
