"""DistributedOptimizer(op=Adasum): Horovod's delta optimizer.

Adasum combines what each rank would do alone, so each rank steps the wrapped optimizer on
its own gradients (its learning rate, momentum and Adam moments included) and the steps,
the parameters' deltas, are combined across ranks by Adasum (docs/python.md); every rank
then sets each parameter to where it started plus the combined delta. As with gradients,
a parameter's step and the allreduce of its delta start from a post-accumulate-grad hook,
as soon as the backward pass has its gradient, so the communication overlaps the rest of
the backward pass and the engine fuses small deltas (each still combined on its own).

The learning rate is the one a single rank trains with: Adasum does not grow the step with
the rank count as a sum does (Horovod's advice: do not scale it by size()).
"""

from contextlib import contextmanager

import torch

from .. import _ops
from ._backward_hook import drain_failed_backward, reduce_when_accumulated
from ._parameter_names import parameter_names


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    _hvd_distributed = True  # its step() communicates; the wrapped class's step is its base's

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, process_set=None):
        super(self.__class__, self).__init__(params)
        self._process_set = process_set
        self._compression = compression
        self._parameter_names = parameter_names(self.param_groups, named_parameters)
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for p in self._parameter_names}
        # Where each parameter was before this rank's own step: the delta's origin.
        self._starts = {}
        self._handles = {}
        self._backward_ended = None  # False while a backward pass runs its hooks (_backward_hook.py)
        self._backward_task = None
        self._requires_update = set()
        self._hook_handles = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._requires_update.add(p)
                    self._hook_handles.append(p.register_post_accumulate_grad_hook(self._make_hook(p)))

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _step_alone(self, p):
        """The wrapped optimizer's step on p only: its group holds p alone, the others nothing."""
        stashed = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(p is q for q in group["params"]) else []
        try:
            super(self.__class__, self).step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = params

    def _allreduce_delta_async(self, p):
        if p.grad is None:
            # Unused in this rank's forward pass, maybe not in another's: every rank submits it.
            p.grad = torch.zeros_like(p)
        start = self._starts.get(p)
        if start is None:
            start = self._starts[p] = torch.empty_like(p, requires_grad=False)
        with torch.no_grad():
            start.copy_(p)
            self._step_alone(p)
            p.sub_(start)  # p holds this rank's delta until step()
        compressed, ctx = self._compression.compress(p.data)
        handle = _ops.allreduce_async_(compressed, name="adasum." + self._parameter_names[p], op=_ops.Adasum,
                                       process_set=self._process_set)
        return handle, (compressed, ctx)

    def _make_hook(self, p):
        return reduce_when_accumulated(self, p, self._allreduce_delta_async)

    def synchronize(self):
        """Nothing to wait for before step(): the deltas are combined inside it (Horovod's)."""

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("skip_synchronize() has no use with op=Adasum: gradients are not reduced, the "
                             "optimizer's steps are, inside step()")
        yield  # pragma: no cover  (a generator, for contextmanager)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_delta_async(p)
        for p, (handle, _) in list(self._handles.items()):
            if handle is None:  # step() before backward_passes_per_step passes: reduced now
                self._handles[p] = self._allreduce_delta_async(p)
        for p, (handle, (compressed, ctx)) in self._handles.items():
            delta = self._compression.decompress(_ops.synchronize(handle), ctx)
            with torch.no_grad():
                start = self._starts[p]
                start.add_(delta.to(start.dtype))
                p.copy_(start)
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._handles.clear()
        self._backward_ended = None
        return loss

    def zero_grad(self, set_to_none=True):
        # After a backward pass that raised: the deltas its hooks started are waited out and
        # each parameter put back where its step began (the wrapped optimizer's own state,
        # momentum say, keeps that step).
        def restore(p):
            with torch.no_grad():
                p.copy_(self._starts[p])

        drain_failed_backward(self, _ops.synchronize, restore)
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step(); the pending allreduces would be lost")
        return super(self.__class__, self).zero_grad(set_to_none=set_to_none)


