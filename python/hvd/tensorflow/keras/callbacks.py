"""hvd.tensorflow.keras.callbacks: hvd.keras.callbacks under Horovod's tf.keras name."""

from ...keras.callbacks import (  # noqa: F401
    BestModelCheckpoint,
    BroadcastGlobalVariablesCallback,
    LearningRateScheduleCallback,
    LearningRateWarmupCallback,
    MetricAverageCallback,
)
