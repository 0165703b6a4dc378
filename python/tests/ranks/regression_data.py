"""The small regression dataset the Lightning and Accelerate ranks train on: made here from
a fixed seed (no download), the same on every rank and every run."""

import torch
from torch.utils.data import TensorDataset


def dataset():
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(256, 8, generator=generator)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1) / 8 + 0.01 * torch.randn(256, 1, generator=generator)
    return TensorDataset(x, y)
