"""Rank side of test_timeline.py: Horovod's start_timeline and stop_timeline. Each rank
writes its own file; the test reads them after the job."""

import sys

import numpy as np

import hvd

out = sys.argv[1]
hvd.init()
x = np.ones(4, np.float32)
hvd.allreduce(x, name="before")  # no timeline yet: in no file
hvd.start_timeline(f"{out}/first.json")
hvd.start_timeline(f"{out}/first.json")  # the same file again: nothing changes
for _ in range(3):
    hvd.allreduce(x, name="recorded")
try:
    hvd.start_timeline(f"{out}/other.json")
    raise AssertionError("a second timeline started while the first was written")
except hvd.HvdUsageError as e:
    assert "already being written to" in str(e) and "first" in str(e), e
hvd.stop_timeline()
try:
    hvd.start_timeline("")  # would have been the working directory, and rank 1's file beside it
    raise AssertionError("an empty timeline path was taken")
except ValueError as e:
    assert "empty" in str(e), e
try:
    hvd.start_timeline(out)  # a directory: refused on every rank, rank 1's name beside it never made
    raise AssertionError("a directory was taken for the timeline")
except hvd.HvdInvalidArgumentError as e:
    assert "is a directory" in str(e), e
hvd.allreduce(x, name="between")  # stopped: in no file
hvd.stop_timeline()  # without one: nothing
hvd.start_timeline(f"{out}/second.json", mark_cycles=True)
hvd.allreduce(x, name="marked")
hvd.stop_timeline()
print("ok")
