"""Rank side of the ParameterServerStrategy test: a real PS job from hvdrun's TF_CONFIG.
Workers and parameter servers start a TensorFlow server and wait in server.join() forever,
as TensorFlow's tutorial has them; the chief coordinates 20 training steps on the workers,
prints "chief trained <steps> steps, loss <x>" and exits 0. hvdrun must then end the job."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    print(f"{resolver.task_type} {resolver.task_id} serving", flush=True)
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                  task_index=resolver.task_id, protocol="grpc", start=True)
    server.join()
else:
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(tf.zeros((4, 1)))
        optimizer_lr = 0.1

    @tf.function
    def step():
        x = tf.random.stateless_normal((16, 4), seed=(1, 2))
        y = tf.reduce_sum(x, axis=1, keepdims=True)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
        w.assign_sub(optimizer_lr * tape.gradient(loss, w))
        return loss

    losses = [coordinator.schedule(step) for _ in range(20)]
    coordinator.join()
    print(f"chief trained {len(losses)} steps, loss {float(losses[-1].fetch()):.4f}", flush=True)
