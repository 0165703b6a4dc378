"""Rank side of the TF_CONFIG tests: MultiWorkerMirroredStrategy, configured only by the
TF_CONFIG hvdrun gave this rank, trains a small Keras model on digits (a custom loop); each worker prints
its task, the replicas in sync and a checksum of its variables afterwards."""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

task = json.loads(os.environ["TF_CONFIG"])["task"]
tf.config.threading.set_intra_op_parallelism_threads(1)
strategy = tf.distribute.MultiWorkerMirroredStrategy()
keras.utils.set_random_seed(0)
digits = load_digits()
x, y = (digits.data / 16.0).astype("float32"), digits.target.astype("int64")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16 * strategy.num_replicas_in_sync).repeat()
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
dataset = dataset.with_options(options)
global_batch = 16 * strategy.num_replicas_in_sync
with strategy.scope():
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)])
    optimizer = keras.optimizers.SGD(0.05)
batches = iter(strategy.experimental_distribute_dataset(dataset))


# A custom training loop, as TensorFlow's multi-worker tutorial writes it (Keras 3.15's
# model.fit trips over MultiWorkerMirroredStrategy's per-replica batches when it builds).
@tf.function
def train_step(iterator):
    def step(features, labels):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            per_sample = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
            loss = tf.nn.compute_average_loss(per_sample, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return strategy.reduce("SUM", strategy.run(step, args=next(iterator)), axis=None)


for _ in range(16):
    loss = train_step(batches)
checksum = sum(float(np.sum(w.numpy().astype(np.float64))) for w in model.weights)
print(f"task {task['type']} {task['index']} replicas {strategy.num_replicas_in_sync} "
      f"loss {float(loss):.4f} checksum {checksum:.10e}", flush=True)
print("ok", flush=True)
