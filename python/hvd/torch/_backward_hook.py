"""The post-accumulate-grad hook both torch wrappers register (optimizer.py's averaging one
and adasum_optimizer.py's delta one): it counts a parameter's backward passes and, at the
last of backward_passes_per_step, starts its reduction. It also notes whether the backward
pass it ran in got to its end: one that raised (an out-of-memory error, say, which a
training loop catches to skip the batch) leaves reductions pending that zero_grad() then
waits out (drain_failed_backward) instead of refusing."""

import torch


def reduce_when_accumulated(optimizer, p, start):
    """A hook for p on `optimizer` (its _handles, _allreduce_delay, backward_passes_per_step,
    _backward_task and _backward_ended): start(p) returns the (handle, ctx) pair kept in
    _handles."""

    def ended():
        optimizer._backward_ended = True

    def hook(_param):
        task = torch._C._current_graph_task_id()
        if task != optimizer._backward_task:
            # The first hook of this backward pass: torch runs the callback when the pass
            # finishes, and never when it raises.
            optimizer._backward_task = task
            optimizer._backward_ended = False
            torch.autograd.Variable._execution_engine.queue_callback(ended)
        if optimizer._handles.get(p, (None,))[0] is not None and optimizer._allreduce_delay[p] <= 0:
            raise AssertionError("gradients were computed more than backward_passes_per_step times before "
                                 "step(); increase backward_passes_per_step to accumulate gradients locally")
        optimizer._allreduce_delay[p] -= 1
        handle, ctx = None, None
        if optimizer._allreduce_delay[p] == 0:
            handle, ctx = start(p)
        optimizer._handles[p] = (handle, ctx)

    return hook


def drain_failed_backward(optimizer, synchronize, restore=None):
    """After a backward pass that raised: waits for the reductions its hooks had started
    (every rank that skips the batch started the same ones; errors are dropped with the
    batch), then restore(p) for each, and forgets them, so the next step starts clean.
    False when there was none."""
    if optimizer._backward_ended is not False or not optimizer._handles:
        return False
    for p, (handle, _) in optimizer._handles.items():
        if handle is None:
            continue
        try:
            synchronize(handle)
        except Exception:  # noqa: BLE001 - the batch is being dropped; its failure with it
            pass
        if restore is not None:
            restore(p)
    optimizer._handles.clear()
    for q in optimizer._allreduce_delay:
        optimizer._allreduce_delay[q] = optimizer.backward_passes_per_step
    optimizer._backward_ended = None
    return True
