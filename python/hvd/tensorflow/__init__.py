"""hvd.tensorflow: hvd for TensorFlow 2 programs, with Horovod's names (`import
horovod.tensorflow as hvd` becomes `import hvd.tensorflow as hvd`).

Collectives take tf.Tensor and tf.Variable values and return tf.Tensor, eagerly and inside
tf.function. How graph mode reaches the runtime: tf.numpy_function, one call per group of
tensors (DistributedGradientTape hands all of a step's gradients to one call, which
submits them as named async requests the engine fuses). No TensorFlow custom op is
compiled, so this hvd works with any TensorFlow 2 without building against it; the cost
is one Python call and a copy of each tensor in and out per group (measured in
docs/benchmarks.md). XLA cannot compile a Python call: under jit_compile=True these
functions raise HvdUsageError saying so (compute the gradients under XLA, reduce outside).
"""

import numpy as np
import tensorflow as tf

from .. import (  # noqa: F401  the core API, re-exported
    Adasum,
    Average,
    HorovodInternalError,
    HvdError,
    HvdInvalidArgumentError,
    HvdPeerError,
    HvdTimeoutError,
    HvdUnavailableError,
    HvdUsageError,
    Max,
    ProcessSet,
    add_process_set,
    global_process_set,
    remove_process_set,
    Min,
    Product,
    ReduceOp,
    Sum,
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
    nccl_built,
    preemption_agreed,
    preemption_requested,
    rank,
    rocm_built,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
)
from .. import _gradient_options, _hvd, _ops
from .compression import Compression


def _refuse_xla(what):
    try:  # TensorFlow's own test of "inside an XLA compilation" (not in its public API)
        from tensorflow.python.framework import ops
        from tensorflow.python.ops import control_flow_util

        in_xla = control_flow_util.GraphOrParentsInXlaContext(ops.get_default_graph())
    except (ImportError, AttributeError):
        in_xla = False
    if in_xla:
        raise HvdUsageError(
            f"hvd.tensorflow.{what} cannot run inside an XLA-compiled function (jit_compile=True): XLA "
            "cannot call into hvd's runtime. Compile the model or tf.function with jit_compile=False, or "
            "compute the gradients in an XLA function and reduce them outside it"
        )


def _host_array(value):
    """A tf value as a NumPy array the runtime takes (bfloat16 travels as float32: NumPy
    has no bfloat16 that DLPack can carry)."""
    array = np.asarray(value)
    if array.dtype.name == "bfloat16":
        array = array.astype(np.float32)
    return array


def _set_size(process_set):
    return size() if process_set is None else process_set.size()


def _set_rank(process_set):
    return rank() if process_set is None else process_set.rank()


def _reduce_arrays(arrays, op, prefix, process_set=None):
    """Every array allreduced, submitted together so the engine can fuse them."""
    handles = [_ops.allreduce_async(_host_array(a), name=f"{prefix}.{i}", op=op, process_set=process_set)
               for i, a in enumerate(arrays)]
    return [_ops.synchronize(h) for h in handles]


def _through_host(function, tensors, what):
    """Runs function(list of NumPy arrays) -> list of NumPy arrays on tf tensors: directly
    when eager, through one tf.numpy_function in a graph. Results keep dtypes and shapes."""
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []
    if tf.executing_eagerly():
        results = function([t.numpy() for t in tensors])
        return [tf.cast(tf.convert_to_tensor(r), t.dtype) for r, t in zip(results, tensors)]
    _refuse_xla(what)

    def host(*arrays):
        return [np.asarray(r).astype(a.dtype, copy=False) for r, a in zip(function(list(arrays)), arrays)]

    results = tf.numpy_function(host, tensors, Tout=[t.dtype for t in tensors], stateful=True, name=f"hvd_{what}")
    for r, t in zip(results, tensors):
        r.set_shape(t.shape)
    return list(results)


_group_counter = [0]


def _group_name(name, what):
    if name is not None:
        return name
    # Unnamed groups get a name from the order they are built in, the same on every rank
    # when every rank runs the same program.
    _group_counter[0] += 1
    return f"{what}.{_group_counter[0]}"


def _scaled(tensor, factor):
    """tensor * factor for Horovod's prescale_factor and postscale_factor; an integer tensor
    keeps its type, the product truncated, as Horovod's scaling leaves it."""
    if factor == 1.0:
        return tensor
    tensor = tf.convert_to_tensor(tensor)
    if tensor.dtype.is_floating or tensor.dtype.is_complex:
        return tensor * tf.cast(factor, tensor.dtype)
    return tf.cast(tf.cast(tensor, tf.float64) * factor, tensor.dtype)


def _horovod_keywords(device_dense="", device_sparse=""):
    """Horovod's placement hints, which hvd has no use for (its ops run where the runtime
    does), checked as strings so a value passed in their place is not dropped silently."""
    _gradient_options.check_names(device_dense=device_dense, device_sparse=device_sparse)


def grouped_allreduce(tensors, op=None, name=None, compression=Compression.none, process_set=None, *, average=None,
                      device_dense="", device_sparse="", prescale_factor=1.0, postscale_factor=1.0,
                      ignore_name_scope=False):
    """Allreduces a list of tensors in one go (fused by the engine); returns new tensors.
    Horovod's keywords: prescale_factor and postscale_factor multiply before and after the
    reduction; the device hints and ignore_name_scope change nothing here."""
    _horovod_keywords(device_dense, device_sparse)
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        reduced = grouped_allreduce([_scaled(t, prescale_factor) for t in tensors], op=op, name=name,
                                    compression=compression, process_set=process_set, average=average)
        return [_scaled(r, postscale_factor) for r in reduced]
    op = _ops.reduce_op(op, average)
    prefix = _group_name(name, "grouped_allreduce")
    compressed = [compression.compress(tf.convert_to_tensor(t)) for t in tensors]
    reduced = _through_host(lambda arrays: _reduce_arrays(arrays, op, prefix, process_set), [c for c, _ in compressed],
                            "grouped_allreduce")
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, compressed)]


# The gradients of allreduce, allgather and broadcast are Horovod's (its registered
# gradients in horovod/tensorflow/mpi_ops.py): allreduce reduces the output gradients with
# its own op; allgather averages them and keeps this rank's rows; broadcast averages them
# on the root and gives zero elsewhere. Each is a collective, matched across ranks by the
# order the gradients are built in, as the forward calls are.


try:  # TensorFlow's own test of "a GradientTape is recording" (not in its public API)
    from tensorflow.python.eager.record import could_possibly_record as _tape_recording
except ImportError:
    def _tape_recording():
        return True


def _may_need_gradient():
    """Whether a gradient through a call made now could be asked for: always while tracing
    a tf.function (its cost is paid once), and eagerly only while a tape records: an eager
    tf.custom_gradient call costs more than the allreduce itself (measured: a 4-element
    eager allreduce at np=2 took 0.57 ms through it under a tape, 0.16 ms without)."""
    return not tf.executing_eagerly() or _tape_recording()


def _allreduce_gradient(op, compression, process_set=None):
    def gradient(upstream):
        if op not in (Average, Sum):
            raise HvdUsageError(f"hvd: allreduce with op {op.name} has no gradient; only Sum or Average carry one "
                                "back (tf.stop_gradient the tensor, or reduce with one of those)")
        return grouped_allreduce([upstream], op=op, compression=compression, process_set=process_set)[0]

    return gradient


def allreduce(tensor, average=None, name=None, op=None, compression=Compression.none, process_set=None, *,
              device_dense="", device_sparse="", prescale_factor=1.0, postscale_factor=1.0, ignore_name_scope=False):
    """tensor reduced across ranks (of process_set: the whole job by default; op: Average by
    default), as a new tf.Tensor; differentiable. Horovod's keywords: prescale_factor and
    postscale_factor multiply before and after the reduction (the gradient carries them too);
    the device hints and ignore_name_scope change nothing here."""
    _horovod_keywords(device_dense, device_sparse)
    if isinstance(tensor, tf.IndexedSlices):
        tensor = tf.convert_to_tensor(tensor)
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        reduced = allreduce(_scaled(tensor, prescale_factor), average=average, name=name, op=op,
                            compression=compression, process_set=process_set)
        return _scaled(reduced, postscale_factor)
    op = _ops.reduce_op(op, average)
    if not _may_need_gradient():
        return grouped_allreduce([tensor], op=op, name=name, compression=compression, process_set=process_set)[0]

    @tf.custom_gradient
    def reduce(x):
        out = grouped_allreduce([x], op=op, name=name, compression=compression, process_set=process_set)[0]
        return out, _allreduce_gradient(op, compression, process_set)

    return reduce(tf.convert_to_tensor(tensor))


def broadcast(tensor, root_rank, name=None, process_set=None, *, ignore_name_scope=False):
    """root_rank's tensor on every rank (of process_set; root_rank is a rank of the job), as a
    new tf.Tensor; differentiable."""
    prefix = _group_name(name, "broadcast")

    def host_broadcast(x):
        return _through_host(lambda arrays: [_ops.broadcast(_host_array(arrays[0]), root_rank, name=prefix,
                                                            process_set=process_set)], [x], "broadcast")[0]

    if not _may_need_gradient():
        return host_broadcast(tensor)

    def gradient(upstream):
        averaged = grouped_allreduce([upstream], op=Average, process_set=process_set)[0]
        return averaged if rank() == root_rank else tf.zeros_like(averaged)

    @tf.custom_gradient
    def send(x):
        return host_broadcast(x), gradient

    return send(tf.convert_to_tensor(tensor))


def broadcast_(variables, root_rank, name=None, process_set=None):
    """Horovod's in-place broadcast: root_rank's values assigned to `variables` (one or a
    list) on every rank, which are returned."""
    many = isinstance(variables, (list, tuple))
    broadcast_variables(variables if many else [variables], root_rank=root_rank, name=name, process_set=process_set)
    return variables


def broadcast_global_variables(root_rank):
    """Horovod's TensorFlow 1 call. TensorFlow 2 keeps no collection of global variables, so,
    as Horovod does under TensorFlow 2, it is refused, naming what to broadcast instead."""
    raise HvdUsageError("hvd: broadcast_global_variables needs TensorFlow 1's global variables, which TensorFlow 2 "
                        f"does not keep: call hvd.broadcast_variables(model.variables, root_rank={root_rank}) (and "
                        "the optimizer's variables once built), or pass "
                        "hvd.callbacks.BroadcastGlobalVariablesCallback(0) to model.fit")


def broadcast_variables(variables, root_rank=0, process_set=None, inplace=False, name=None):
    """Assigns root_rank's values to every variable, on every rank (Keras weights, optimizer
    slots), eagerly or inside a tf.function (whose automatic control dependencies run the
    assignments). Horovod's arguments in its order; inplace (Horovod's, for TensorFlow 1's
    reference variables) changes nothing: each variable is assigned its new value."""
    if not isinstance(inplace, bool):
        raise TypeError(f"hvd: broadcast_variables' inplace must be a bool, not {type(inplace).__name__}")
    variables = list(variables)
    prefix = _group_name(name, "broadcast_variables")

    def host(arrays):
        handles = [_ops.broadcast_async(_host_array(a), root_rank, name=f"{prefix}.{i}", process_set=process_set)
                   for i, a in enumerate(arrays)]
        return [_ops.synchronize(h) for h in handles]

    values = _through_host(host, [v.value() if hasattr(v, "value") and callable(v.value) else v for v in variables],
                           "broadcast_variables")
    for v, value in zip(variables, values):
        v.assign(tf.cast(value, v.dtype))


def allgather(tensor, name=None, process_set=None, *, ignore_name_scope=False):
    """Every rank's tensor stacked along the first dimension (first dimensions may differ);
    differentiable."""
    tensor = tf.convert_to_tensor(tensor)
    if not _may_need_gradient():
        return _gather(tensor, name, process_set)

    @tf.custom_gradient
    def gather(x):
        def gradient(upstream):
            averaged = grouped_allreduce([upstream], op=Average, process_set=process_set)[0]
            mine = tf.shape(x)[0] if x.shape.rank != 0 else tf.constant(1)  # a scalar is one row
            rows = _gather(tf.reshape(mine, [1]), None, process_set)
            before = tf.reduce_sum(rows[:_set_rank(process_set)])
            return tf.reshape(averaged[before : before + mine], tf.shape(x))

        return _gather(x, name, process_set), gradient

    return gather(tensor)


def grouped_allgather(tensors, name=None, process_set=None, *, ignore_name_scope=False):
    """Horovod's: each tensor gathered as allgather gathers it, every request submitted before
    any is waited for (one at a time where a gradient may be asked for); differentiable as
    allgather."""
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if _may_need_gradient():
        return [allgather(t, name=None if name is None else f"{name}.{i}", process_set=process_set)
                for i, t in enumerate(tensors)]
    if not tensors:
        return []
    prefix = _group_name(name, "grouped_allgather")

    def host(arrays):
        handles = [_ops.allgather_async(_host_array(a), name=f"{prefix}.{i}", process_set=process_set)
                   for i, a in enumerate(arrays)]
        return [np.asarray(_ops.synchronize(h)).astype(a.dtype) for h, a in zip(handles, arrays)]

    if tf.executing_eagerly():
        return [tf.convert_to_tensor(r) for r in host([t.numpy() for t in tensors])]
    _refuse_xla("grouped_allgather")
    out = tf.numpy_function(lambda *arrays: host(list(arrays)), tensors, Tout=[t.dtype for t in tensors],
                            stateful=True, name="hvd_grouped_allgather")
    for o, t in zip(out, tensors):
        o.set_shape(tf.TensorShape([None]).concatenate(t.shape[1:]))
    return list(out)


def _gather(tensor, name, process_set=None):
    prefix = _group_name(name, "allgather")
    if tf.executing_eagerly():
        return tf.convert_to_tensor(_ops.allgather(_host_array(tensor.numpy()), name=prefix, process_set=process_set))
    _refuse_xla("allgather")
    out = tf.numpy_function(lambda a: np.asarray(_ops.allgather(_host_array(a), name=prefix,
                                                                process_set=process_set)).astype(a.dtype),
                            [tensor], Tout=tensor.dtype, stateful=True, name="hvd_allgather")
    out.set_shape(tf.TensorShape([None]).concatenate(tensor.shape[1:]))
    return out


def reducescatter(tensor, op=None, name=None, process_set=None, *, device_dense="", compression=Compression.none,
                  ignore_name_scope=False, prescale_factor=1.0, postscale_factor=1.0):
    """Horovod's: tensor (the same shape on every rank) reduced across ranks (op: Average by
    default), this rank getting its rows of the result (rows // size(), one more on each of
    the first rows % size() ranks); differentiable as Horovod's: the output gradients
    gathered, times size() for Sum. Horovod's keywords: compression around the exchange,
    prescale_factor and postscale_factor before and after it; the device hint and
    ignore_name_scope change nothing here."""
    _horovod_keywords(device_dense)
    if prescale_factor != 1.0 or postscale_factor != 1.0 or compression is not Compression.none:
        compressed, context = compression.compress(_scaled(tensor, prescale_factor))
        out = reducescatter(compressed, op=op, name=name, process_set=process_set)
        return _scaled(compression.decompress(out, context), postscale_factor)
    tensor = tf.convert_to_tensor(tensor)
    op = Average if op is None else op
    if tensor.shape.rank == 0:
        raise ValueError("hvd: reducescatter splits the tensor's first dimension, and a 0-d tensor has none")
    if not _may_need_gradient():
        return _scatter(tensor, op, name, process_set)

    @tf.custom_gradient
    def scatter(x):
        def gradient(upstream):
            if op not in (Average, Sum):
                raise HvdUsageError(f"hvd: reducescatter with op {op.name} has no gradient; only Sum or Average "
                                    "carry one back")
            # Horovod's: times size() for Sum (its tests: output gradients of ones give size()).
            gathered = _gather(tf.convert_to_tensor(upstream), None, process_set)
            return gathered * _set_size(process_set) if op == Sum else gathered

        return _scatter(x, op, name, process_set), gradient

    return scatter(tensor)


def _scatter(tensor, op, name, process_set=None):
    prefix = _group_name(name, "reducescatter")
    if tf.executing_eagerly():
        out = _ops.reducescatter(_host_array(tensor.numpy()), op=op, name=prefix, process_set=process_set)
        return tf.cast(tf.convert_to_tensor(out), tensor.dtype)
    _refuse_xla("reducescatter")
    out = tf.numpy_function(lambda a: np.asarray(_ops.reducescatter(_host_array(a), op=op, name=prefix,
                                                                    process_set=process_set)).astype(a.dtype),
                            [tensor], Tout=tensor.dtype, stateful=True, name="hvd_reducescatter")
    out.set_shape(tf.TensorShape([None]).concatenate(tensor.shape[1:]))
    return out


def grouped_reducescatter(tensors, op=None, name=None, process_set=None, *, ignore_name_scope=False):
    """Horovod's: each tensor reduce-scattered as reducescatter does it, every request
    submitted before any is waited for; differentiable as reducescatter."""
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    op = Average if op is None else op
    if any(t.shape.rank == 0 for t in tensors):
        raise ValueError("hvd: reducescatter splits the tensor's first dimension, and a 0-d tensor has none")
    if not tensors:
        return []
    if not _may_need_gradient():
        return _scatter_group(tensors, op, name, process_set)

    @tf.custom_gradient
    def scatter(*xs):
        def gradient(*upstream):
            if op not in (Average, Sum):
                raise HvdUsageError(f"hvd: reducescatter with op {op.name} has no gradient; only Sum or Average "
                                    "carry one back")
            gathered = [_gather(tf.convert_to_tensor(u), None, process_set) for u in upstream]
            return [g * _set_size(process_set) if op == Sum else g for g in gathered]

        return _scatter_group(list(xs), op, name, process_set), gradient

    return list(scatter(*tensors))


def _scatter_group(tensors, op, name, process_set=None):
    prefix = _group_name(name, "grouped_reducescatter")

    def host(arrays):
        handles = [_ops.reducescatter_async(_host_array(a), op=op, name=f"{prefix}.{i}", process_set=process_set)
                   for i, a in enumerate(arrays)]
        return [_ops.synchronize(h) for h in handles]

    if tf.executing_eagerly():
        return [tf.cast(tf.convert_to_tensor(r), t.dtype) for r, t in zip(host([t.numpy() for t in tensors]), tensors)]
    _refuse_xla("grouped_reducescatter")
    out = tf.numpy_function(lambda *arrays: [np.asarray(r).astype(a.dtype) for r, a in zip(host(list(arrays)), arrays)],
                            tensors, Tout=[t.dtype for t in tensors], stateful=True, name="hvd_grouped_reducescatter")
    for o, t in zip(out, tensors):
        o.set_shape(tf.TensorShape([None]).concatenate(t.shape[1:]))
    return list(out)


def alltoall(tensor, splits=None, name=None, process_set=None, *, ignore_name_scope=False):
    """Horovod's: splits[d] of tensor's rows to rank d (None: an even split), the rows every
    rank sent this one back in rank order; with splits, (output, received_splits) as int32.
    Differentiable: the gradient goes back the way the rows came."""
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0:
        raise ValueError("hvd: alltoall splits the tensor's first dimension, and a 0-d tensor has none")
    if not _may_need_gradient():
        out, received = _exchange(tensor, splits, name, process_set)
        return out if splits is None else (out, received)

    @tf.custom_gradient
    def exchange(x):
        out, received = _exchange(x, splits, name, process_set)

        def gradient(*upstream):  # the received splits are integers: no gradient of theirs
            return _exchange(tf.convert_to_tensor(upstream[0]), received, None, process_set)[0]

        return (out, received), gradient

    out, received = exchange(tensor)
    return out if splits is None else (out, received)


def _exchange(tensor, splits, name, process_set=None):
    """alltoall's output and received splits (int32), eager or in a graph."""
    prefix = _group_name(name, "alltoall")

    def host(array, split_array):
        x = _host_array(array)
        n = _set_size(process_set)
        if split_array is None and array.shape[0] % n == 0:
            split_array = np.full(n, array.shape[0] // n, dtype=np.int64)
        if split_array is None:  # rows that do not split evenly: the runtime's error names them
            _ops.alltoall(x, name=prefix, process_set=process_set)
        out, received = _ops.alltoall(x, splits=split_array, name=prefix, process_set=process_set)
        return np.asarray(out).astype(array.dtype), np.asarray(received, dtype=np.int32)

    split_tensor = tf.constant([], dtype=tf.int64) if splits is None else tf.cast(tf.convert_to_tensor(splits), tf.int64)
    if tf.executing_eagerly():
        out, received = host(tensor.numpy(), None if splits is None else split_tensor.numpy())
        return tf.cast(tf.convert_to_tensor(out), tensor.dtype), tf.convert_to_tensor(received)
    _refuse_xla("alltoall")
    out, received = tf.numpy_function(lambda a, s: host(a, None if splits is None else s), [tensor, split_tensor],
                                      Tout=[tensor.dtype, tf.int32], stateful=True, name="hvd_alltoall")
    out.set_shape(tf.TensorShape([None]).concatenate(tensor.shape[1:]))
    received.set_shape([None])
    return out, received


def _dense(gradient):
    return tf.convert_to_tensor(gradient) if isinstance(gradient, tf.IndexedSlices) else gradient


def _variable_keys(variable):
    """What identifies a variable: a tf.Variable by ref(), a Keras 3 variable (no ref()) by its
    identity and by the tf.Variable it holds, so either form of it is found."""
    if hasattr(variable, "ref"):
        return {variable.ref()}
    keys = {id(variable)}
    inner = getattr(variable, "_value", None)
    if hasattr(inner, "ref"):
        keys.add(inner.ref())
    return keys


def _local_refs(local_layers):
    """The trainable variables of Horovod's local_layers (a Keras layer or several), by
    _variable_keys."""
    if local_layers is None:
        return set()
    layers = [local_layers] if isinstance(local_layers, tf.keras.layers.Layer) else list(local_layers)
    for layer in layers:
        if not isinstance(layer, tf.keras.layers.Layer):
            raise ValueError(f"hvd: local_layers holds {type(layer).__name__}, not a Keras layer: pass the layers "
                             "whose gradients stay each rank's own")
    return {key for layer in layers for v in layer.trainable_weights for key in _variable_keys(v)}


def _reduce_all_but_local(gradients, sources, local, scale_local, reduce, process_set):
    """gradients[i] reduced with reduce() unless sources[i] is a local variable (one of its
    _variable_keys in `local`): that one stays this rank's own, divided by the set's size when scale_local, as
    Horovod scales them (so a local layer learns at the rate the averaged ones do under an
    optimizer whose rate was scaled by size())."""
    gradients = list(gradients)
    is_local = [bool(local) and not local.isdisjoint(_variable_keys(s)) for s in sources]
    shared = [i for i, own in enumerate(is_local) if not own]
    for i, r in zip(shared, reduce([gradients[i] for i in shared])):
        gradients[i] = r
    if scale_local:
        n = _set_size(process_set)
        for i, own in enumerate(is_local):
            g = gradients[i]
            if not own or g is None:
                continue
            gradients[i] = tf.IndexedSlices(g.values / n, g.indices, g.dense_shape) if isinstance(
                g, tf.IndexedSlices) else g / n
    return gradients


def allreduce_gradients(gradients, op=None, compression=Compression.none, name="gradients",
                        gradient_predivide_factor=1.0, process_set=None):
    """A step's gradients averaged across ranks in one fused group; None stays None. A
    gradient_predivide_factor f splits the average as Horovod does: 1/f before the sum, f/size
    after it. Sparse gradients (IndexedSlices) are made dense first (Horovod's sparse_as_dense)."""
    if _set_size(process_set) == 1:
        return list(gradients)
    gradients = list(gradients)
    present = [i for i, g in enumerate(gradients) if g is not None]
    dense = [_dense(gradients[i]) for i in present]
    if gradient_predivide_factor != 1.0:
        dense = [g * (1.0 / gradient_predivide_factor) for g in dense]
        op = Sum
    reduced = grouped_allreduce(dense, op=op, name=name, compression=compression, process_set=process_set)
    if gradient_predivide_factor != 1.0:
        reduced = [r * (gradient_predivide_factor / _set_size(process_set)) for r in reduced]
    out = list(gradients)
    for i, r in zip(present, reduced):
        out[i] = r
    return out


# Horovod's graph-era ops: this rank's place as an int32 tensor.
def size_op(process_set_id=0, name=None):
    """size() as an int32 tensor (Horovod's); of the process set with that id when not 0."""
    return _identity_op(size, process_set_id, name, _hvd.process_set_size)


def local_size_op(process_set_id=0, name=None):
    """local_size() as an int32 tensor (Horovod's)."""
    return _identity_op(local_size, process_set_id, name)


def rank_op(process_set_id=0, name=None):
    """rank() as an int32 tensor (Horovod's); within the process set with that id when not 0."""
    return _identity_op(rank, process_set_id, name, _hvd.process_set_rank)


def local_rank_op(process_set_id=0, name=None):
    """local_rank() as an int32 tensor (Horovod's)."""
    return _identity_op(local_rank, process_set_id, name)


def cross_rank_op(process_set_id=0, name=None):
    """cross_rank() as an int32 tensor (Horovod's)."""
    return _identity_op(cross_rank, process_set_id, name)


def cross_size_op(process_set_id=0, name=None):
    """cross_size() as an int32 tensor (Horovod's)."""
    return _identity_op(cross_size, process_set_id, name)


def process_set_included_op(process_set_id=0, name=None):
    """Horovod's: 1 as an int32 tensor when this rank is in the process set with that id, else
    0; HvdInvalidArgumentError for an id no set has."""
    included = process_set_id == 0 or rank() in _hvd.process_set_ranks(process_set_id)
    return tf.constant(1 if included else 0, dtype=tf.int32, name=name)


def _identity_op(value, process_set_id, name, in_set=None):
    if process_set_id == 0:
        return tf.constant(value(), dtype=tf.int32, name=name)
    if in_set is None:
        raise HvdUsageError(f"hvd: process set {process_set_id}: hvd keeps no local or cross ranks for a process set "
                            "(its rank_op and size_op have them)")
    return tf.constant(in_set(process_set_id), dtype=tf.int32, name=name)


def broadcast_object_fn(root_rank=0, session=None, name=None):
    """Horovod's: a function that broadcasts a picklable object from root_rank (TensorFlow 2:
    no session)."""
    if session is not None:
        raise HvdUsageError("hvd: broadcast_object_fn takes no session under TensorFlow 2 (hvd has no TF1 graph mode)")
    return lambda obj: broadcast_object(obj, root_rank=root_rank, name=name)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False, backward_passes_per_step=1, op=Average,
                         gradient_predivide_factor=1.0, average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=None):
    """Horovod's, for a Keras optimizer (what TensorFlow 2 programs use): as
    hvd.keras.DistributedOptimizer, its gradients averaged (op) across ranks before it applies
    them, in model.fit and in a custom loop's apply_gradients. A TensorFlow 1
    tf.compat.v1.train.Optimizer is refused: use DistributedGradientTape with it."""
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise HvdUsageError(f"hvd: {type(optimizer).__name__} is a TensorFlow 1 optimizer, which hvd does not wrap; "
                            "average the gradients with hvd.DistributedGradientTape, or use a Keras optimizer")
    if use_locking:
        raise HvdUsageError("hvd: use_locking is for TensorFlow 1 optimizers; a Keras optimizer takes none")
    from .. import keras as _keras  # imported here: hvd.keras itself imports this module

    return _keras.DistributedOptimizer(optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
                                       compression=compression, sparse_as_dense=sparse_as_dense,
                                       gradient_predivide_factor=gradient_predivide_factor, op=op,
                                       backward_passes_per_step=backward_passes_per_step,
                                       average_aggregated_gradients=average_aggregated_gradients,
                                       num_groups=num_groups, groups=groups, process_set=process_set)


class DistributedGradientTape:
    """Wraps a tf.GradientTape: gradient() returns the gradients averaged across ranks.

        with tf.GradientTape() as tape:
            loss = ...
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
    """

    def __init__(self, tape, device_dense="", device_sparse="", compression=Compression.none, sparse_as_dense=False,
                 op=Average, gradient_predivide_factor=1.0, num_groups=0, groups=None, process_set=None,
                 scale_local_gradients=True):
        # Horovod's arguments, in its order. Devices are placement hints hvd has no use for;
        # sparse gradients are always made dense here; groups: see _gradient_options.
        _gradient_options.check_names(device_dense=device_dense, device_sparse=device_sparse)
        _gradient_options.check(op, gradient_predivide_factor, num_groups, groups)
        self._tape = tape
        self._op = op
        self._compression = compression
        self._predivide = gradient_predivide_factor
        self._process_set = process_set
        self._scale_local = scale_local_gradients
        self._local = set()

    def register_local_source(self, source):
        """Horovod's: the gradient of this variable stays this rank's own (not reduced), divided
        by the size when scale_local_gradients (PartialDistributedGradientTape's local layers)."""
        self._local |= _variable_keys(source)

    def gradient(self, target, sources, output_gradients=None, **kwargs):
        gradients = self._tape.gradient(target, sources, output_gradients=output_gradients, **kwargs)
        many = isinstance(sources, (list, tuple))

        def reduce(shared):
            return allreduce_gradients(shared, op=self._op, compression=self._compression,
                                       name="DistributedGradientTape", gradient_predivide_factor=self._predivide,
                                       process_set=self._process_set)

        reduced = _reduce_all_but_local(gradients if many else [gradients], sources if many else [sources],
                                        self._local, self._scale_local, reduce, self._process_set)
        return reduced if many else reduced[0]

    def __getattr__(self, attribute):
        return getattr(self._tape, attribute)

    def __enter__(self):
        self._tape.__enter__()
        return self

    def __exit__(self, *exc):
        return self._tape.__exit__(*exc)


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                                   sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=None, local_layers=None, scale_local_gradients=True):
    """Horovod's: a DistributedGradientTape whose local_layers (a Keras layer or several: a
    rank's own head or embedding) keep each rank's own gradients, divided by the size unless
    scale_local_gradients=False; every other gradient is averaged as usual."""
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set, scale_local_gradients)
    tape._local = _local_refs(local_layers)
    return tape


from . import elastic  # noqa: E402,F401  Horovod's hvd.elastic for TensorFlow
