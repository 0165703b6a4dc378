"""Rank side of test_tensorflow.py's learning-rate test: a small Keras 3 model trained 6 epochs
of 4 batches under Horovod's callbacks as its ImageNet example chains them (a warm-up of 2
epochs, then schedules), with SGD and momentum; prints each batch's rate as
"lr <epoch> <batch> <rate>" and each epoch's logged rate as "logged <epoch> <rate>".

    keras_lr.py staircase    warm-up (2 epochs), 0.5x for epochs 3-4, 0.01x from epoch 5
    keras_lr.py smooth       a schedule of 0.1 * (epoch + batch / 4) for epochs 0-1, no steps given
"""

import sys

import keras
import numpy as np

import hvd.keras as hvd

hvd.init()
mode = sys.argv[1]


class Recorder(keras.callbacks.Callback):
    """Last in the list: sees the rate the others set for the batch."""

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        rate = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
        print(f"lr {self.epoch} {batch} {rate:.6g}", flush=True)


model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.1, momentum=0.9))
model.compile(optimizer=optimizer, loss="mse")
x = np.random.default_rng(hvd.rank()).normal(size=(32, 3)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)
if mode == "staircase":
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                 hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.1, warmup_epochs=2, momentum_correction=False),
                 hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.1, multiplier=0.5, start_epoch=3, end_epoch=5),
                 hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.1, multiplier=lambda epoch: 0.01,
                                                            start_epoch=5)]
    epochs = 6
else:
    callbacks = [hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.1, multiplier=lambda epoch: epoch,
                                                            staircase=False, end_epoch=2)]
    epochs = 2
history = model.fit(x, y, batch_size=8, epochs=epochs, callbacks=callbacks + [Recorder()], verbose=0, shuffle=False)
for epoch, rate in enumerate(history.history["lr"]):
    print(f"logged {epoch} {rate:.6g}", flush=True)
print("ok", flush=True)
