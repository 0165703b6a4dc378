"""bench/keras_step_time.py: time per training step of examples/python/keras_digits.py's model
(a small CNN on scikit-learn's digits, 16 samples per rank per step, SGD with momentum),
trained by one of:
    --mode hvd-fit    model.fit with hvd.keras.DistributedOptimizer (the Horovod tutorial's way)
    --mode hvd-tape   a tf.function custom loop with hvd.tensorflow.DistributedGradientTape
    --mode mwms       the same custom loop under tf.distribute.MultiWorkerMirroredStrategy,
                      configured by hvdrun's TF_CONFIG (run under hvdrun --tf-config)
    --mode local      the same custom loop with no communication at all
    --mode hvd-host   hvd-tape, but the gradients always go through the runtime (the tape
                      skips it on one rank): on one rank, hvd-host minus local is what hvd's
                      tf.numpy_function crossing costs per step
Every rank prints `steptime <microseconds>` over --steps steps after --warmup; the caller
takes the slowest rank. Keras 3.15's model.fit cannot run under MultiWorkerMirroredStrategy
(docs/python.md), so MWMS runs the custom loop, as TensorFlow's multi-worker tutorial does.
Prints; asserts nothing. bench/run_python_bench.sh runs every mode side by side.
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--mode", choices=["hvd-fit", "hvd-tape", "hvd-host", "mwms", "local"], required=True)
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--warmup", type=int, default=20)
parser.add_argument("--batch-size", type=int, default=16, help="samples per rank per step")
args = parser.parse_args()

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
strategy = tf.distribute.MultiWorkerMirroredStrategy() if args.mode == "mwms" else None
if args.mode.startswith("hvd"):
    import hvd.keras as hvd_keras
    import hvd.tensorflow as hvd

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
elif strategy is not None:
    rank, size = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
else:
    rank, size = 0, 1
keras.utils.set_random_seed(0)

digits = load_digits()
x = (digits.images / 16.0).astype("float32")[..., None]
y = digits.target.astype("int64")
x, y = x[rank::size], y[rank::size]
steps = args.warmup + args.steps


def build_model():
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])


loss_of = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
stamps = []

if args.mode == "hvd-fit":
    class Stamp(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch + 1 in (args.warmup, steps):
                stamps.append(time.perf_counter())

    model = build_model()
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.01 * size, momentum=0.9)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(args.batch_size)
    model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0,
              callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0), Stamp()])
else:
    if strategy is not None:
        # Each worker reads its own shard (as above); the strategy sees per-worker batches.
        global_batch = args.batch_size * size
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(args.batch_size).with_options(options)
        with strategy.scope():
            model = build_model()
            optimizer = keras.optimizers.SGD(0.01 * size, momentum=0.9)
        batches = iter(strategy.experimental_distribute_dataset(data))

        @tf.function
        def train_step():
            def step(features, labels):
                with tf.GradientTape() as tape:
                    loss = tf.nn.compute_average_loss(loss_of(labels, model(features, training=True)),
                                                      global_batch_size=global_batch)
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            return strategy.reduce("SUM", strategy.run(step, args=next(batches)), axis=None)
    else:
        model = build_model()
        optimizer = keras.optimizers.SGD(0.01 * size, momentum=0.9)
        batches = iter(tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(args.batch_size))
        if args.mode != "local":
            hvd.broadcast_variables(model.variables, root_rank=0)

        @tf.function
        def train_step():
            features, labels = next(batches)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(loss_of(labels, model(features, training=True)))
            if args.mode == "hvd-tape":
                tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            if args.mode == "hvd-host":
                grads = hvd.grouped_allreduce(grads, name="gradients")
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

    for i in range(steps):
        loss = train_step()
        if i + 1 in (args.warmup, steps):
            float(loss)  # waits for the step, as fit's callback does
            stamps.append(time.perf_counter())

print(f"steptime {(stamps[1] - stamps[0]) / args.steps * 1e6:.1f}", flush=True)
