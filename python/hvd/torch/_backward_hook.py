"""The post-accumulate-grad hook both torch wrappers register (optimizer.py's averaging one
and adasum_optimizer.py's delta one): it counts a parameter's backward passes and, at the
last of backward_passes_per_step, starts its reduction."""


def reduce_when_accumulated(optimizer, p, start):
    """A hook for p on `optimizer` (its _handles, _allreduce_delay and
    backward_passes_per_step): start(p) returns the (handle, ctx) pair kept in _handles."""

    def hook(_param):
        if optimizer._handles.get(p, (None,))[0] is not None and optimizer._allreduce_delay[p] <= 0:
            raise AssertionError("gradients were computed more than backward_passes_per_step times before "
                                 "step(); increase backward_passes_per_step to accumulate gradients locally")
        optimizer._allreduce_delay[p] -= 1
        handle, ctx = None, None
        if optimizer._allreduce_delay[p] == 0:
            handle, ctx = start(p)
        optimizer._handles[p] = (handle, ctx)

    return hook
