"""Horovod's ElasticSampler: the dataset's indices (shuffled per epoch when asked) less the
ones recorded as processed this epoch, dealt to the ranks round robin and padded to an even
share; its state (epoch, processed indices) goes with a TorchState."""

import math
import random

import torch

from ... import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset, self.shuffle, self.seed = dataset, shuffle, seed
        self.epoch = 0
        self.processed_indices = set()
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        """A new epoch: nothing processed yet, and (shuffled) a new order."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Marks this rank's batch batch_idx (of batch_size) as processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices):
        self.processed_indices.update(indices)

    def get_indices(self, batch_idx, batch_size):
        """This rank's indices of batch batch_idx, as the last iteration dealt them."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state):
        self.epoch = state["epoch"]
        self.processed_indices = set(state["processed_indices"])
        self.reset()

    def reset(self):
        """Re-deals what is left of the epoch over the job's ranks."""
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = [i for i in order if i not in self.processed_indices]
        self.num_replicas, self.rank = size(), rank()
        self.num_samples = math.ceil(len(self.remaining_indices) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        dealt = list(self.remaining_indices)
        if dealt:
            while len(dealt) < self.total_size:  # pad with the first ones, so every rank gets as many
                dealt += dealt[: self.total_size - len(dealt)]
        self.indices = dealt[self.rank:self.total_size:self.num_replicas]
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
