"""The data and model shared by torch_digits.py (hvd) and torch_digits_ddp.py (PyTorch's
DistributedDataParallel), so the two train the same network on the same batches.

Data: scikit-learn's bundled 8x8 handwritten digits (1,797 images; nothing is downloaded).
"""

import numpy as np
import torch
from sklearn.datasets import load_digits


def load(seed=0):
    """(train_x, train_y, test_x, test_y) as tensors; a fixed 80/20 split."""
    digits = load_digits()
    x = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)  # N x 1 x 8 x 8
    y = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    split = int(0.8 * len(x))
    return x[order[:split]], y[order[:split]], x[order[split:]], y[order[split:]]


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),  # 16 x 4 x 4
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),  # 512
        torch.nn.Linear(512, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def batches(count, global_batch, epoch, rank, size, seed=0):
    """This rank's share of each global batch of an epoch: every rank shuffles the same way
    (seed and epoch), cuts global batches (dropping the last, partial one) and takes every
    size-th sample of each, so the ranks' shares together are exactly the global batch."""
    order = torch.randperm(count, generator=torch.Generator().manual_seed(seed * 1000 + epoch))
    for start in range(0, count - global_batch + 1, global_batch):
        yield order[start:start + global_batch][rank::size]


def shard(count, rank, size):
    """The test samples this rank evaluates."""
    return np.arange(count)[rank::size]
