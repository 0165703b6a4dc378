"""Rank side of the TF_CONFIG role test: what TensorFlow's own TFConfigClusterResolver makes
of the TF_CONFIG hvdrun gave this rank, as one JSON line."""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
print(json.dumps({"type": resolver.task_type, "index": resolver.task_id,
                  "cluster": resolver.cluster_spec().as_dict()}, sort_keys=True), flush=True)
