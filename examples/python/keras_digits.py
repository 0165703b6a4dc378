"""Horovod's Keras tutorial, step by step, on Keras 3 with hvd.keras:

    hvdrun -np 4 python examples/python/keras_digits.py --epochs 8

1. hvd.init(); 2. pin a GPU per local rank (when there are GPUs); 3. each rank trains on its
shard of the data; 4. scale the learning rate by the number of ranks and wrap the optimizer
in hvd.DistributedOptimizer; 5. callbacks: broadcast rank 0's initial state, average the
metrics, warm the learning rate up; 6. checkpoints only on rank 0, and a restarted job
resumes from rank 0's at the epoch it broadcasts; 7. print only on rank 0.
Data: scikit-learn's bundled 8x8 digits (nothing is downloaded).
"""

import argparse
import glob
import os
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import hvd.keras as hvd  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=8)
parser.add_argument("--batch-size", type=int, default=16, help="samples per rank per step")
parser.add_argument("--base-lr", type=float, default=0.02, help="learning rate of one rank; scaled by size")
parser.add_argument("--warmup-epochs", type=int, default=2)
parser.add_argument("--checkpoint-dir", help="rank 0 saves checkpoint-<epoch>.keras here; a restart resumes")
parser.add_argument("--print-weights-checksum", action="store_true",
                    help="every rank prints a checksum of its weights after each epoch")
args = parser.parse_args()

# 1. Join the job. 2. One GPU per local rank; CPU threads shared fairly otherwise.
hvd.init()
rank, size = hvd.rank(), hvd.size()
gpus = tf.config.list_physical_devices("GPU")
if gpus:
    # The GPU at the local rank, as Horovod's examples pick it (modulo the count: srun
    # --gpus-per-task shows a rank its own alone).
    tf.config.set_visible_devices(gpus[hvd.local_rank() % len(gpus)], "GPU")
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(0)

# 3. This rank's shard: every size-th sample of the training set, cut so that all ranks
# run the same number of steps.
digits = load_digits()
x = (digits.images / 16.0).astype("float32")[..., None]
y = digits.target.astype("int64")
order = np.random.default_rng(0).permutation(len(x))
train, test = order[: int(0.8 * len(x))], order[int(0.8 * len(x)):]
usable = len(train) // (args.batch_size * size) * args.batch_size * size
x_train, y_train = x[train[:usable]][rank::size], y[train[:usable]][rank::size]
x_test, y_test = x[test][rank::size], y[test][rank::size]


def build_model():
    model = keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])
    # 4. The learning rate scaled by size: each step sees size x batch-size samples.
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(args.base_lr * size, momentum=0.9))
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=False)
    return model


# 6. Resume: rank 0 finds its last checkpoint; every rank learns the epoch to start from.
resume_from_epoch, latest = 0, None
if rank == 0 and args.checkpoint_dir:
    saved = sorted(glob.glob(os.path.join(args.checkpoint_dir, "checkpoint-*.keras")),
                   key=lambda p: int(re.search(r"checkpoint-(\d+)", p).group(1)))
    if saved:
        latest = saved[-1]
        resume_from_epoch = int(re.search(r"checkpoint-(\d+)", latest).group(1))
resume_from_epoch = hvd.broadcast_object(resume_from_epoch, root_rank=0, name="resume_from_epoch")
model = hvd.load_model(latest) if latest else build_model()


class Report(keras.callbacks.Callback):
    """Prints the (averaged) metrics on rank 0 and, when asked, each rank's weights checksum."""

    def on_epoch_end(self, epoch, logs=None):
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {logs['loss']:.4f}, accuracy {logs['accuracy']:.4f}, "
                  f"lr {float(model.optimizer.learning_rate.numpy()):.4f}", flush=True)
        if args.print_weights_checksum:
            total = sum(float(np.sum(w.numpy().astype(np.float64))) for w in model.weights)
            print(f"weights checksum after epoch {epoch + 1}: {total:.12e}", flush=True)


class LocalMetrics(keras.callbacks.Callback):
    """Each rank's own epoch metrics, before MetricAverageCallback replaces them (for the test)."""

    def on_epoch_end(self, epoch, logs=None):
        if args.print_weights_checksum:
            print(f"local metrics after epoch {epoch + 1}: loss {logs['loss']:.9e}", flush=True)


# 5. Callbacks, in this order: state from rank 0, then averaged metrics, then warm-up.
callbacks = [
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    LocalMetrics(),
    hvd.callbacks.MetricAverageCallback(),
    hvd.callbacks.LearningRateWarmupCallback(initial_lr=args.base_lr * size, warmup_epochs=args.warmup_epochs),
    Report(),
]
if rank == 0 and args.checkpoint_dir:
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    callbacks.append(keras.callbacks.ModelCheckpoint(os.path.join(args.checkpoint_dir, "checkpoint-{epoch}.keras")))

# 7. Only rank 0 talks.
model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, initial_epoch=resume_from_epoch,
          shuffle=True, callbacks=callbacks, verbose=0)
loss, accuracy = model.evaluate(x_test, y_test, batch_size=64, verbose=0)
averaged = hvd.allreduce(np.array([loss, accuracy]), name="test_metrics")
if rank == 0:
    print(f"test loss {float(averaged[0]):.4f}, test accuracy {float(averaged[1]):.4f}", flush=True)
