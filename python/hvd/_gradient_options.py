"""Horovod's options for averaging gradients, checked alike by every framework's wrapper
(hvd.torch.DistributedOptimizer, hvd.tensorflow.DistributedGradientTape,
hvd.keras.DistributedOptimizer)."""

from . import _ops


def check_names(**names):
    """TypeError for a name or device that is not a string: an op passed by position where
    hvd's earlier signature had it (DistributedOptimizer(opt, hvd.Sum)) lands there now, in
    Horovod's order, and would be dropped silently."""
    for argument, value in names.items():
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{argument} must be a string, got {value!r}; give op= by name, as Horovod's order puts "
                            f"{argument} there")


def check(op, gradient_predivide_factor=1.0, num_groups=0, groups=None):
    """ValueError naming what Horovod would refuse. num_groups and groups (Horovod's fusion
    groups) are taken and change nothing: hvd's engine fuses every gradient pending in a
    cycle already (docs/runtime.md)."""
    if op not in (_ops.Average, _ops.Sum, _ops.Adasum):
        raise ValueError(f"gradients are averaged, summed or combined by Adasum; op={op!r} is none of these")
    # A bool is what hvd.torch's earlier sixth argument, sparse_as_dense, was.
    if isinstance(gradient_predivide_factor, bool) or not isinstance(gradient_predivide_factor, (int, float)):
        raise TypeError(f"gradient_predivide_factor must be a number, got {gradient_predivide_factor!r}; give "
                        "sparse_as_dense= by name, as Horovod's order puts gradient_predivide_factor there")
    if gradient_predivide_factor != 1.0 and op != _ops.Average:
        raise ValueError(f"gradient_predivide_factor={gradient_predivide_factor} splits an average; op={op!r} "
                         "is not Average")
    if gradient_predivide_factor <= 0:
        raise ValueError(f"gradient_predivide_factor must be positive, got {gradient_predivide_factor}")
    if not isinstance(num_groups, int) or num_groups < 0:
        raise ValueError(f"num_groups must be a non-negative integer, got {num_groups!r}")
    if groups is not None and (num_groups or not isinstance(groups, (list, tuple))
                               or not all(isinstance(g, (list, tuple)) for g in groups)):
        raise ValueError("groups must be a list of lists of parameters, and not given with num_groups")
