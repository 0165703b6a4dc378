"""DistributedOptimizer: Horovod's gradient averaging for any torch.optim optimizer.

Each parameter's gradient is allreduced as soon as the backward pass has accumulated it
(a post-accumulate-grad hook starts an async in-place allreduce named after the
parameter), so communication overlaps the rest of the backward pass and the engine fuses
the small ones. step() waits for them all, then runs the wrapped optimizer's step.

Sparse gradients (nn.Embedding(sparse=True)) go as Horovod's do: their indices and values
are allgathered and the gradient rebuilt from every rank's rows (duplicates sum when the
optimizer coalesces them), values divided by the size to average; with
sparse_as_dense=True they are made dense first and allreduced like the rest.
"""

import warnings
from contextlib import contextmanager

import torch

from .. import _gradient_options, _hvd, _ops
from ._backward_hook import drain_failed_backward, reduce_when_accumulated
from ._parameter_names import parameter_names
from .adasum_optimizer import _DistributedAdasumOptimizer
from .compression import Compression


class _SparseGather:
    """A sparse gradient's two allgathers in flight: its indices (rows of coordinates)
    and its values."""

    def __init__(self, grad, name, process_set=None):
        grad = grad.coalesce()
        self.size = grad.size()
        self.ranks = _hvd.size() if process_set is None else process_set.size()
        self.indices = _ops.allgather_async(grad.indices().t().contiguous(), name="sparse.indices." + name,
                                            process_set=process_set)
        self.values = _ops.allgather_async(grad.values().contiguous(), name="sparse.values." + name,
                                           process_set=process_set)

    def result(self, op):
        indices = _ops.synchronize(self.indices).t()
        values = _ops.synchronize(self.values)
        if op == _ops.Average:
            values = values / self.ranks
        return torch.sparse_coo_tensor(indices, values, self.size)


class _DistributedOptimizer(torch.optim.Optimizer):
    _hvd_distributed = True  # its step() synchronizes; the wrapped class's step is its base's
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op, sparse_as_dense=False,
                 gradient_predivide_factor=1.0, process_set=None):
        super(self.__class__, self).__init__(params)
        self._process_set = process_set
        # Horovod's split of the average: each gradient scaled by 1 / factor before the sum and
        # by factor / size after it (less overflow in float16 sums).
        self._predivide = float(gradient_predivide_factor)
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._parameter_names = parameter_names(self.param_groups, named_parameters)
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for p in self._parameter_names}
        self.op = op
        self._handles = {}
        self._backward_ended = None  # False while a backward pass runs its hooks (_backward_hook.py)
        self._backward_task = None
        self._requires_update = set()
        self._hook_handles = []
        self._synchronized = False
        self._should_synchronize = True
        if (_hvd.size() if process_set is None else process_set.size()) > 1:
            self._register_hooks()

    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._backward_ended = None
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._requires_update.add(p)
                    self._hook_handles.append(p.register_post_accumulate_grad_hook(self._make_hook(p)))

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            # This rank's forward pass did not use p, another rank's may have: every rank
            # must still submit it, or the others would wait for it.
            p.grad = torch.zeros_like(p)
        name = self._parameter_names[p]
        if p.grad.is_sparse:
            if not self._sparse_as_dense:
                return _SparseGather(p.grad, name, self._process_set), (None, None)
            p.grad = p.grad.to_dense()
        if self._predivide != 1.0:
            p.grad.mul_(1.0 / self._predivide)
        compressed, ctx = self._compression.compress(p.grad)
        op = _ops.Sum if self._predivide != 1.0 else self.op
        return _ops.allreduce_async_(compressed, name="allreduce." + name, op=op, process_set=self._process_set), (
            compressed, ctx)

    def _make_hook(self, p):
        return reduce_when_accumulated(self, p, self._allreduce_grad_async)

    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hook has not run) and
        writes the averaged gradients into .grad."""
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, (compressed, ctx)) in self._handles.items():
            self._allreduce_delay[p] = self.backward_passes_per_step
            if isinstance(handle, _SparseGather):
                p.grad = handle.result(self.op)
                continue
            output = _ops.synchronize(handle)
            if output is not p.grad:
                p.grad.copy_(self._compression.decompress(output, ctx))
            if self._predivide != 1.0:
                p.grad.mul_(self._predivide / (_hvd.size() if self._process_set is None else self._process_set.size()))
        self._handles.clear()
        self._backward_ended = None
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """For step() after an explicit synchronize() (to clip the averaged gradients):

            optimizer.synchronize()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            with optimizer.skip_synchronize():
                optimizer.step()
        """
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() after "
                              "optimizer.synchronize(): the gradients are allreduced a second time; wrap step() in "
                              "`with optimizer.skip_synchronize():` after an explicit synchronize()")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, set_to_none=True):
        # After a backward pass that raised (a batch skipped on an out-of-memory error), the
        # allreduces its hooks started are waited out and dropped with the batch.
        drain_failed_backward(self, _ops.synchronize)
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step() or optimizer.synchronize(); the pending allreduces would be lost")
        return super(self.__class__, self).zero_grad(set_to_none=set_to_none)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none, backward_passes_per_step=1,
                         op=_ops.Average, gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=None):
    """Wraps a torch.optim optimizer so that step() uses gradients averaged (op) across ranks.

    op=Adasum: Horovod's delta optimizer instead (adasum_optimizer.py): each rank steps the
    wrapped optimizer on its own gradients, and the steps' deltas, not the gradients, are
    combined by Adasum.

    named_parameters: model.named_parameters(); names match gradients across ranks.
    compression: Compression.none or Compression.fp16 (float gradients sent as float16).
    backward_passes_per_step: local backward passes (gradient accumulation) per allreduce.
    gradient_predivide_factor: the average split as Horovod splits it: gradients scaled by
    1 / factor before the sum and by factor / size after it (op=Average only).
    num_groups, groups: Horovod's fusion groups, checked and taken; hvd's engine fuses every
    gradient pending in a cycle already (docs/runtime.md), so they change nothing.
    sparse_as_dense: sparse gradients are made dense and allreduced (else allgathered, as
    Horovod's default).
    process_set: average over this process set's ranks only (Horovod's; the whole job by
    default); every member wraps its optimizer with the same set.
    """
    _gradient_options.check(op, gradient_predivide_factor, num_groups, groups)
    ranks = _hvd.size() if process_set is None else process_set.size()
    # A subclass of the optimizer's own class, so isinstance checks and the class's step() keep working.
    if op == _ops.Adasum and ranks > 1:
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedAdasumOptimizer.__dict__))
        wrapped = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, process_set)
    else:
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__))
        wrapped = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
                      sparse_as_dense, gradient_predivide_factor, process_set)
    # The state the optimizer already has (momentum loaded from a checkpoint, say) carries
    # over; Horovod's wrapper starts empty, which silently drops it.
    wrapped.state.update(optimizer.state)
    return wrapped
