"""hvd.tensorflow and hvd.keras with real TensorFlow (tensorflow-cpu) and Keras 3."""

import re

import numpy as np

from conftest import SOURCE_DIR, launch, run_all_ranks_ok

EXAMPLE = SOURCE_DIR / "examples" / "python" / "keras_digits.py"


def test_collectives_and_the_gradient_tape_match_numpy_eager_and_in_tf_function_and_xla_is_refused():
    run_all_ranks_ok(3, "tensorflow_ops.py")
