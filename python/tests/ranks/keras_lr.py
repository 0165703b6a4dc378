"""Rank side of test_tensorflow.py's learning-rate test: a small Keras 3 model trained 6 epochs
of 4 batches under Horovod's callbacks as its ImageNet example chains them (a warm-up of 2
epochs, then schedules), with SGD and momentum; prints each batch's rate as
"lr <epoch> <batch> <rate>" and each epoch's logged rate as "logged <epoch> <rate>".

    keras_lr.py staircase    warm-up (2 epochs), 0.5x for epochs 3-4, 0.01x from epoch 5
    keras_lr.py smooth       a schedule of 0.1 * (epoch + batch / 4) for epochs 0-1, no steps given
    keras_lr.py options      DistributedOptimizer with Horovod's other arguments (predivide
                             factor, sparse_as_dense, devices, groups) trains the same weights
                             as without; backward_passes_per_step > 1 is refused naming Keras's
                             gradient_accumulation_steps; op=hvd.Adasum trains in model.fit;
                             prints "options ok"
    keras_lr.py best DIR     Horovod's BestModelCheckpoint, its filepath set after it is made
                             (as Horovod's Spark estimator sets it): DIR/best.keras holds the
                             epoch with the lowest val_loss; without a filepath, or with one
                             that is no .keras file, fit is refused naming filepath; prints
                             "best ok"
"""

import sys

import keras
import numpy as np

# Horovod's tf.keras name, as its tutorial imports it (horovod.tensorflow.keras): the same
# hvd.keras, trained through here so the alias is exercised, not only looked up.
import hvd.tensorflow.keras as hvd

hvd.init()
mode = sys.argv[1]


class Recorder(keras.callbacks.Callback):
    """Last in the list: sees the rate the others set for the batch."""

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        rate = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
        print(f"lr {self.epoch} {batch} {rate:.6g}", flush=True)


if mode == "options":
    def trained(**options):
        keras.utils.set_random_seed(1)
        net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        net.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), **options), loss="mse")
        data = np.random.default_rng(hvd.rank()).normal(size=(16, 3)).astype(np.float32)
        net.fit(data, data.sum(axis=1, keepdims=True), batch_size=4, epochs=2, verbose=0, shuffle=False,
                callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
        return np.concatenate([v.ravel() for v in net.get_weights()])

    plain = trained()
    horovods = trained(gradient_predivide_factor=4.0, sparse_as_dense=True, device_dense="/gpu:0", num_groups=1)
    assert np.allclose(plain, horovods, rtol=1e-5, atol=1e-6), (plain, horovods)
    # op=hvd.Adasum inside model.fit: the gradients combined by Adasum, not averaged (the
    # ranks' data differ, so the weights do), and every rank keeps the same weights.
    adasum = trained(op=hvd.Adasum)
    assert not np.allclose(plain, adasum, rtol=1e-3, atol=1e-4), (plain, adasum)
    everyone = hvd.allgather(adasum[None])
    assert all(np.array_equal(everyone[0], row) for row in everyone), everyone
    try:  # op where hvd's earlier signature had it: Horovod's name now, refused, not dropped
        hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), hvd.Sum)
        raise SystemExit("an op given by position was taken for a name")
    except TypeError as error:
        assert "give op= by name" in str(error), error
    try:
        hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), backward_passes_per_step=2)
        raise SystemExit("backward_passes_per_step=2 was accepted")
    except ValueError as error:
        assert "gradient_accumulation_steps=2" in str(error), error
    print("options ok", flush=True)
    print("ok", flush=True)
    sys.exit(0)

if mode == "best":
    import os

    keras.utils.set_random_seed(2)
    net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    net.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.5)), loss="mse")
    data = np.random.default_rng(3).normal(size=(32, 3)).astype(np.float32)
    # A learning rate this high makes val_loss go up and down: the best epoch is not the last.
    best = hvd.callbacks.BestModelCheckpoint(monitor="val_loss", mode="min")
    best.filepath = os.path.join(sys.argv[2], "best.keras")
    history = net.fit(data, data.sum(axis=1, keepdims=True) ** 2, batch_size=8, epochs=6, verbose=0,
                      shuffle=False, validation_split=0.25, callbacks=[best])
    losses = history.history["val_loss"]
    # Otherwise a checkpoint of every epoch would keep the best one too.
    assert losses.index(min(losses)) < len(losses) - 1, losses
    kept = keras.models.load_model(best.filepath, compile=False)
    val = data[24:]
    kept_loss = float(np.mean((kept.predict(val, verbose=0) - val.sum(axis=1, keepdims=True) ** 2) ** 2))
    assert abs(kept_loss - min(losses)) <= 1e-4 * max(1.0, min(losses)), (kept_loss, losses)
    print("epochs' val_loss", [round(v, 4) for v in losses], "kept", round(kept_loss, 4), flush=True)
    for filepath, words in ((None, "filepath"), (os.path.join(sys.argv[2], "best.h5x"), ".keras")):
        refused = hvd.callbacks.BestModelCheckpoint()
        refused.filepath = filepath
        try:
            net.fit(data, data.sum(axis=1, keepdims=True), epochs=1, verbose=0, callbacks=[refused])
            raise SystemExit(f"fit went on with filepath={filepath!r}")
        except ValueError as error:
            assert "BestModelCheckpoint" in str(error) and words in str(error), error
    print("best ok", flush=True)
    sys.exit(0)

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
