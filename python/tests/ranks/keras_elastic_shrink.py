"""Rank side of test_tensorflow.py's elastic jobs (hvdrun --min-np): Horovod's Keras elastic
recipe (KerasState, the three callbacks, @hvd.elastic.run around model.fit), or with "tape"
a custom loop in a tf.function with hvd.tensorflow's TensorFlowKerasState. The worker named
by ELASTIC_VICTIM (its first rank) SIGKILLs itself after batch 2 of epoch 1; the others must
re-form as a smaller world, resume from the last commit and finish every epoch with the
same weights."""

import os
import signal
import sys

import numpy as np
import tensorflow as tf

EPOCHS, STEPS, BATCH = 3, 6, 8
mode = sys.argv[1] if len(sys.argv) > 1 else "keras"
if mode == "keras":
    import keras

    import hvd.keras as hvd
else:
    import keras

    import hvd.tensorflow as hvd

hvd.init()
worker = int(os.environ["HVD_ELASTIC_WORKER"])
victim = int(os.environ.get("ELASTIC_VICTIM", "-1"))
rng = np.random.default_rng(worker)
x = rng.normal(size=(STEPS * BATCH, 5)).astype("float32")
y = (x @ np.arange(1, 6, dtype="float32")[:, None]).astype("float32")
keras.utils.set_random_seed(worker)  # every rank starts different: the sync makes them rank 0's
model = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(1)])
resets = []


def die_if_victim(epoch, batch):
    if worker == victim and epoch == 1 and batch == 2:
        os.kill(os.getpid(), signal.SIGKILL)


if mode == "keras":
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    state = hvd.elastic.KerasState(model, batch=0, epoch=0)

    class Victim(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = state.epoch

        def on_batch_end(self, batch, logs=None):
            die_if_victim(self.epoch, batch)

    callbacks = [hvd.elastic.CommitStateCallback(state), hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.UpdateEpochStateCallback(state), Victim()]

    @hvd.elastic.run
    def train(state):
        model.fit(x, y, batch_size=BATCH, steps_per_epoch=STEPS, epochs=EPOCHS - state.epoch, callbacks=callbacks,
                  verbose=0)
else:
    optimizer = keras.optimizers.SGD(0.01)
    optimizer.build(model.trainable_variables)
    state = hvd.elastic.TensorFlowKerasState(model, optimizer, batch=0, epoch=0)

    @tf.function
    def step(features, labels):
        with hvd.DistributedGradientTape(tf.GradientTape()) as tape:
            loss = tf.reduce_mean((model(features) - labels) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

    @hvd.elastic.run
    def train(state):
        while state.epoch < EPOCHS:
            while state.batch < STEPS:
                die_if_victim(state.epoch, state.batch)
                at = state.batch * BATCH
                step(x[at:at + BATCH], y[at:at + BATCH])
                state.batch += 1
                state.commit()
            state.epoch, state.batch = state.epoch + 1, 0
            state.commit()

state.register_reset_callbacks([lambda: resets.append((hvd.rank(), hvd.size()))])
train(state)
weights = np.concatenate([w.reshape(-1) for w in model.get_weights()])
everyone = hvd.allgather_object(weights)
assert all(np.array_equal(everyone[0], w) for w in everyone), "the ranks left hold different weights"
print(f"ok worker={worker} rank={hvd.rank()} size={hvd.size()} resets={resets} epoch={state.epoch}", flush=True)
