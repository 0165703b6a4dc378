"""Rank side of test_tensorflow.py's gradient test: gradients flow back through
hvd.tensorflow's allreduce, allgather and broadcast as through Horovod's registered
gradients (horovod/tensorflow/mpi_ops.py), eagerly and inside tf.function. Each rank's loss
weighs the collective's result by (rank + 1), so every expected gradient is worked out from
the ranks' weights, not read off hvd (the same cases as torch_autograd.py).
Prints `ok` when every check held.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import hvd.tensorflow as hvd  # noqa: E402

hvd.init()
rank, size = hvd.rank(), hvd.size()
tf.config.threading.set_intra_op_parallelism_threads(1)
weight = float(rank + 1)
mean_weight = (size + 1) / 2
sum_weight = size * (size + 1) / 2
root = size - 1
first = rank * (rank + 1) // 2  # allgather rows given by the ranks before this one


def leaf(*shape):
    return tf.Variable(np.arange(float(np.prod(shape))).reshape(shape) + rank, dtype=tf.float32)


def gradients(x):
    """The gradient of each case's loss with respect to x, for one x per case."""
    with tf.GradientTape(persistent=True) as tape:
        losses = {
            "allreduce Average": tf.reduce_sum(hvd.allreduce(x["avg"] * 3.0, op=hvd.Average) * weight),
            "allreduce Sum": tf.reduce_sum(hvd.allreduce(x["sum"] * 3.0, op=hvd.Sum) * weight),
            # Horovod's scale factors: the gradient carries them too.
            "allreduce Sum scaled": tf.reduce_sum(
                hvd.allreduce(x["scaled"] * 3.0, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5) * weight),
        }
        gathered = hvd.allgather(x["gather"])
        row_weights = tf.range(1.0, tf.cast(tf.shape(gathered)[0], tf.float32) + 1.0)[:, None]
        losses["allgather"] = tf.reduce_sum(gathered * weight * row_weights)
        losses["broadcast"] = tf.reduce_sum(hvd.broadcast(x["bcast"], root_rank=root) * weight)
    keys = {"allreduce Average": "avg", "allreduce Sum": "sum", "allreduce Sum scaled": "scaled", "allgather": "gather",
            "broadcast": "bcast"}
    return {case: tape.gradient(loss, x[keys[case]]) for case, loss in losses.items()}


expected = {
    "allreduce Average": np.full(4, 3 * mean_weight),
    "allreduce Sum": np.full(4, 3 * sum_weight),
    "allreduce Sum scaled": np.full(4, 3 * sum_weight),  # 2.0 * 0.5
    "allgather": mean_weight * np.repeat(np.arange(first + 1.0, first + rank + 2)[:, None], 2, axis=1),
    "broadcast": np.full(3, mean_weight if rank == root else 0.0),
}
for mode, run in (("eager", gradients), ("graph", tf.function(gradients))):
    x = {"avg": leaf(4), "sum": leaf(4), "scaled": leaf(4), "gather": leaf(rank + 1, 2), "bcast": leaf(3)}
    got = run(x)
    for case, want in expected.items():
        assert got[case] is not None, f"{mode} {case}: no gradient"
        assert np.allclose(got[case].numpy(), want), f"{mode} {case}: {got[case].numpy()} != {want}"
        print(f"{mode} {case}: right", flush=True)

for op in (hvd.Max, hvd.Min, hvd.Product):
    x = leaf(2)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(hvd.allreduce(x, op=op))
    try:
        tape.gradient(loss, x)
        raise AssertionError(f"the gradient through allreduce {op.name} did not raise")
    except hvd.HvdUsageError as error:
        assert op.name in str(error) and "Sum or Average" in str(error), error
        print(f"allreduce {op.name}: no gradient, said so", flush=True)

print("ok", flush=True)
