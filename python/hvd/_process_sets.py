"""Horovod's process sets: subsets of the job's ranks whose collectives run among their
members alone, each on connections and an engine of its own (docs/python.md).

    even = hvd.add_process_set([0, 2])            # every rank adds it, member or not
    if even.included():
        hvd.allreduce(x, process_set=even)          # averaged over ranks 0 and 2

Adding and removing are collective over the whole job: every rank makes the same calls in
the same order. hvd.init(process_sets=[...]) adds them at start-up. A broadcast's root_rank
is a rank of the job, as in Horovod; rank() is this rank's place within the set.
"""

import numbers

from . import _hvd


class ProcessSet:
    """Horovod's ProcessSet: sorted job ranks, and the id the runtime gave the set once added
    (None until then, and after it is removed)."""

    process_set_id = None
    ranks = None

    def __init__(self, ranks):
        try:
            ranks = list(ranks)
        except TypeError:
            raise TypeError(f"hvd: a ProcessSet takes a list of ranks, not {type(ranks).__name__}") from None
        if any(isinstance(r, bool) or not isinstance(r, numbers.Integral) for r in ranks):
            raise ValueError(f"hvd: a ProcessSet takes a list of ranks (ints), not {ranks!r}")
        self.ranks = sorted(int(r) for r in ranks)

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """The set's number of ranks, or None before it is added."""
        return None if self.process_set_id is None else _hvd.process_set_size(self.process_set_id)

    def rank(self):
        """This rank's rank within the set, or None before it is added; HvdUsageError on a
        rank outside it. (A broadcast's root is still a rank of the job, as in Horovod.)"""
        return None if self.process_set_id is None else _hvd.process_set_rank(self.process_set_id)

    def included(self):
        """Whether this rank is in the set (None for a set with no ranks yet)."""
        if self.process_set_id == 0:
            return True
        return None if self.ranks is None else _hvd.rank() in self.ranks

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"

    __str__ = __repr__


# The whole job: id 0; its ranks are filled in at init.
global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

# Sets added since init, invalidated at shutdown (their ids do not outlive the runtime).
_added = []


def add_process_set(process_set):
    """Horovod's: adds the set (a ProcessSet or a list of ranks) on every rank and returns it
    with its id. Collective over the job; ranks that disagree, a repeat of an existing set's
    ranks and ranks outside the job raise on every rank."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"hvd: {process_set} was added already")
    process_set.process_set_id = _hvd.add_process_set(process_set.ranks)
    _added.append(process_set)
    return process_set


def remove_process_set(process_set):
    """Horovod's: removes the set on every rank (collective over the job, as adding). False,
    with nothing done, for the global set or one not added; True once removed."""
    set_id = process_set.process_set_id
    if set_id is None or set_id == 0:
        return False
    _hvd.remove_process_set(set_id)
    process_set._invalidate()
    if process_set in _added:
        _added.remove(process_set)
    return True


def _started(process_sets):
    """hvd.init's part: the global set's ranks, then each of process_sets added in order."""
    global_process_set.ranks = list(range(_hvd.size()))
    for process_set in process_sets or ():
        add_process_set(process_set)


def _stopped():
    """hvd.shutdown's part: the sets' ids end with the runtime."""
    for process_set in _added:
        process_set._invalidate()
    _added.clear()


def set_id(process_set):
    """The id the extension takes for a collective's process_set= (None: the global set)."""
    if process_set is None:
        return 0
    if isinstance(process_set, ProcessSet):
        if process_set.process_set_id is None:
            from . import HvdUsageError

            raise HvdUsageError(f"hvd: {process_set} has not been added (hvd.add_process_set, or hvd.init("
                                "process_sets=[...])), or was removed")
        return process_set.process_set_id
    raise TypeError(f"hvd: process_set must be a ProcessSet, not {type(process_set).__name__}")
