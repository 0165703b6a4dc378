"""hvd.tensorflow.keras: Horovod's name for its tf.keras flavour. Scripts written for it
(`import horovod.tensorflow.keras as hvd`, the Horovod Keras tutorial's import since
TensorFlow 2) run with `import hvd.tensorflow.keras as hvd`. TensorFlow 2.16 and later
give tf.keras as Keras 3, so this is hvd.keras under the name those scripts use.
"""

from ...keras import *  # noqa: F401,F403  everything hvd.keras offers, with its names
from ...keras import DistributedOptimizer, load_model  # noqa: F401  named, for readers and linters
from ...keras import elastic  # noqa: F401
from . import callbacks  # noqa: F401
