"""hvd.keras: hvd for Keras 3 (TensorFlow backend), with Horovod's names: the Keras
tutorial (`import horovod.keras as hvd`, which stops at Keras 2) runs with
`import hvd.keras as hvd`.

DistributedOptimizer averages the gradients across ranks before the wrapped optimizer
applies them, inside model.fit's compiled train step; the callbacks broadcast the initial
state, average the metrics and warm the learning rate up.
"""

import keras
import tensorflow as tf

from .. import (  # noqa: F401  the core API, re-exported
    Adasum,
    Average,
    HorovodInternalError,
    HvdError,
    HvdPeerError,
    HvdTimeoutError,
    HvdUsageError,
    ProcessSet,
    Sum,
    add_process_set,
    allgather_object,
    barrier,
    broadcast_object,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    gloo_built,
    gloo_enabled,
    init,
    is_homogeneous,
    is_initialized,
    join,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    global_process_set,
    nccl_built,
    rank,
    remove_process_set,
    rocm_built,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
)
from .. import _gradient_options
from .. import tensorflow as _tensorflow
from ..tensorflow import (  # noqa: F401
    Compression,
    _local_refs,
    _reduce_all_but_local,
    allreduce_gradients,
    broadcast_global_variables,
    broadcast_variables,
    reducescatter,
)


# Horovod's Keras collectives take a tensor-compatible `value` (a NumPy array, a list, a
# number), and allreduce's second positional is the name, as in Horovod's horovod.keras.
def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none):
    """value reduced across ranks (op: Average by default), as a tf.Tensor."""
    return _tensorflow.allreduce(tf.convert_to_tensor(value), average=average, name=name, op=op,
                                 compression=compression, prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor)


def allgather(value, name=None):
    """Every rank's value stacked along the first dimension, in rank order, as a tf.Tensor."""
    return _tensorflow.allgather(tf.convert_to_tensor(value), name=name)


def broadcast(value, root_rank, name=None):
    """root_rank's value on every rank, as a tf.Tensor."""
    return _tensorflow.broadcast(tf.convert_to_tensor(value), root_rank, name=name)

from . import callbacks, elastic  # noqa: F401  elastic: Horovod's hvd.elastic for Keras


def _distributed_class(base, op, compression, gradient_predivide_factor, process_set=None, local=frozenset(),
                       scale_local=True):
    def reduce(shared):
        return allreduce_gradients(shared, op=op, compression=compression, name="DistributedOptimizer",
                                   gradient_predivide_factor=gradient_predivide_factor, process_set=process_set)

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if local:  # which gradient is whose: the variables given, else those the optimizer was built for
            variables = list(trainable_variables) if trainable_variables is not None else self._trainable_variables
            grads = _reduce_all_but_local(grads, variables, local, scale_local, reduce, process_set)
        else:
            grads = reduce(grads)
        return base.apply(self, grads, trainable_variables)

    # The optimizer's own name and module: a saved model records a plain optimizer, and
    # hvd.keras.load_model wraps it again.
    return type(base.__name__, (base,), {"apply": apply, "__module__": base.__module__, "_hvd_distributed": True})


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=Compression.none,
                         sparse_as_dense=False, gradient_predivide_factor=1.0, op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0, groups=None, process_set=None):
    """Makes a Keras 3 optimizer average (op) its gradients across ranks (of process_set: the
    whole job by default) before applying
    them. The optimizer itself is changed and returned: its state and hyperparameters stay.
    Under jit_compile=True (XLA) the train step cannot call hvd: compile with
    jit_compile=False (Keras only picks XLA by itself on GPU machines).

    Horovod's arguments, in its order: name and the devices are hints hvd has no use for,
    sparse gradients are always made dense, gradient_predivide_factor splits the average
    (1/f before the sum, f/size after it), groups change nothing (the engine fuses); local
    gradient accumulation (backward_passes_per_step > 1) is refused: Keras 3 has its own,
    the optimizer's gradient_accumulation_steps."""
    if getattr(optimizer, "_hvd_distributed", False):
        return optimizer
    return _distribute(optimizer, name, device_dense, device_sparse, compression, gradient_predivide_factor, op,
                       backward_passes_per_step, num_groups, groups, process_set)


def _distribute(optimizer, name, device_dense, device_sparse, compression, gradient_predivide_factor, op,
                backward_passes_per_step, num_groups, groups, process_set, local=frozenset(), scale_local=True):
    """DistributedOptimizer's and PartialDistributedOptimizer's checks and class swap, over
    the optimizer's own class (the one under an earlier wrapping of hvd's)."""
    _gradient_options.check_names(name=name, device_dense=device_dense, device_sparse=device_sparse)
    _gradient_options.check(op, gradient_predivide_factor, num_groups, groups)
    if backward_passes_per_step != 1:
        raise ValueError(f"backward_passes_per_step={backward_passes_per_step}: hvd.keras does not accumulate "
                         "gradients itself; give the Keras 3 optimizer gradient_accumulation_steps="
                         f"{backward_passes_per_step} instead (hvd averages each step's gradients across ranks first)")
    own = type(optimizer).__mro__[1] if getattr(optimizer, "_hvd_distributed", False) else type(optimizer)
    optimizer.__class__ = _distributed_class(own, op, compression, gradient_predivide_factor, process_set, local,
                                             scale_local)
    return optimizer


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=Compression.none,
                                sparse_as_dense=False, gradient_predivide_factor=1.0, op=Average,
                                backward_passes_per_step=1, average_aggregated_gradients=False, groups=None,
                                process_set=None, local_layers=None, scale_local_gradients=True):
    """Horovod's: DistributedOptimizer, but the gradients of local_layers (a Keras layer or
    several) stay each rank's own, divided by the size unless scale_local_gradients=False."""
    return _distribute(optimizer, name, device_dense, device_sparse, compression, gradient_predivide_factor, op,
                       backward_passes_per_step, 0, groups, process_set, frozenset(_local_refs(local_layers)),
                       scale_local_gradients)


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=Compression.none, compile=True):
    """keras.models.load_model, with the saved optimizer wrapped again in DistributedOptimizer
    (its state, restored from the file, kept). Horovod's arguments, in its order:
    custom_optimizers, optimizer classes of the program's own, are custom objects by their
    class names."""
    objects = dict(custom_objects or {})
    if isinstance(custom_optimizers, dict):
        raise TypeError("hvd: load_model's second argument is Horovod's custom_optimizers, a list of optimizer "
                        "classes: pass the dict as custom_objects=")
    for cls in custom_optimizers or []:
        objects.setdefault(cls.__name__, cls)
    model = keras.models.load_model(filepath, custom_objects=objects or None, compile=compile)
    if compile and getattr(model, "optimizer", None) is not None:
        DistributedOptimizer(model.optimizer, compression=compression)
    return model
