"""SyncBatchNorm: batch normalization over every rank's batch, Horovod's module.

In training each forward pass allreduces, per channel, the element count, sum and sum of
squares of this rank's input (one call), so every rank normalizes with the statistics of
the whole global batch, and each backward pass allreduces the sums of the output gradient
and of its product with the normalized input, which the input's gradient needs. The weight
and bias gradients stay this rank's (the DistributedOptimizer averages them, as torch's
SyncBatchNorm leaves them to DDP). Every rank must run the layer, forward and backward, in
the same order (the calls are matched by order). In eval mode, or alone, it is
torch.nn.functional.batch_norm.
"""

import torch
import torch.nn.functional as F

from .. import _hvd, _ops


def _channel_sums(tensor):
    """Per channel (dimension 1) sums over every other dimension, as a float64 vector."""
    dims = [d for d in range(tensor.dim()) if d != 1]
    return tensor.double().sum(dim=dims)


def _shaped(vector, like):
    """vector (one value per channel) broadcastable against like (N, C, ...)."""
    return vector.view([1, -1] + [1] * (like.dim() - 2)).to(like.dtype)


class _SyncBatchNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        ctx.input_dtype = x.dtype
        if x.dtype in (torch.float16, torch.bfloat16):  # normalized in float32, as torch's batch norm does
            x = x.float()
        count = torch.full((1,), x.numel() / x.size(1), dtype=torch.float64, device=x.device)
        local = torch.cat([count, _channel_sums(x), _channel_sums(x * x)])
        total = _ops.allreduce(local.contiguous(), op=_ops.Sum)
        channels = x.size(1)
        n = total[0]
        mean = total[1:1 + channels] / n
        var = (total[1 + channels:] / n - mean * mean).clamp_min(0)  # biased, as batch norm normalizes
        invstd = torch.rsqrt(var + eps)
        normalized = (x - _shaped(mean, x)) * _shaped(invstd, x)
        out = normalized
        if weight is not None:
            out = out * _shaped(weight.detach().double(), x) + _shaped(bias.detach().double(), x)
        ctx.save_for_backward(normalized, weight, invstd)
        ctx.count = n
        ctx.mark_non_differentiable(mean, var, n)
        return out, mean, var, n

    @staticmethod
    def backward(ctx, grad_out, _mean, _var, _n):
        normalized, weight, invstd = ctx.saved_tensors
        grad_out = grad_out.to(normalized.dtype)
        grad_weight = grad_bias = None
        if weight is not None:
            grad_weight = _channel_sums(grad_out * normalized).to(weight.dtype)
            grad_bias = _channel_sums(grad_out).to(weight.dtype)
        sums = _ops.allreduce(torch.cat([_channel_sums(grad_out), _channel_sums(grad_out * normalized)]).contiguous(),
                              op=_ops.Sum)
        channels = normalized.size(1)
        sum_dy, sum_dy_xhat = sums[:channels], sums[channels:]
        scale = invstd if weight is None else invstd * weight.detach().double()
        grad_x = _shaped(scale, grad_out) * (grad_out - _shaped(sum_dy / ctx.count, grad_out)
                                             - normalized * _shaped(sum_dy_xhat / ctx.count, grad_out))
        return grad_x.to(ctx.input_dtype), grad_weight, grad_bias, None


class SyncBatchNorm(torch.nn.modules.batchnorm._BatchNorm):
    """Batch normalization with the statistics of every rank's batch, as Horovod's
    hvd.SyncBatchNorm(num_features, eps, momentum, affine, track_running_stats); takes inputs
    of shape (N, C, ...), as BatchNorm1d/2d/3d do."""

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"SyncBatchNorm expects an input of shape (N, C, ...), got {input.dim()}D")

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training or _hvd.size() == 1:
            return super().forward(input)
        out, mean, var, n = _SyncBatchNorm.apply(input, self.weight, self.bias, self.eps)
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                # momentum None: a cumulative average, as torch's batch norm keeps one.
                factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
                unbiased = var * (n / (n - 1)) if n > 1 else var
                self.running_mean.mul_(1 - factor).add_(mean.to(self.running_mean.dtype), alpha=factor)
                self.running_var.mul_(1 - factor).add_(unbiased.to(self.running_var.dtype), alpha=factor)
        return out.to(input.dtype)
