"""Ranks that outnumber their cores beside busy loops: the runtime holds each rank's
collective thread on one CPU while the contention lasts (HVD_CONTENTION_PIN, runtime.md),
and a process the rank forks meanwhile (multiprocessing's fork, as a DataLoader's workers
start) gets every CPU back."""

import os
import subprocess
import sys

import pytest

from conftest import RANKS, Launch, clean_env, hvdrun_path


def test_a_process_forked_by_a_held_rank_gets_every_cpu_back():
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        pytest.skip(f"needs 2 usable CPUs; this process may use {len(usable)}")
    two = usable[:2]
    loops = [
        subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
        for cpu in two
    ]
    try:
        completed = subprocess.run(
            [hvdrun_path(), "-np", "4", sys.executable, str(RANKS / "held_fork.py")],
            capture_output=True, text=True, timeout=240, env=clean_env(),
            # hvdrun and its ranks get the two CPUs: four ranks outnumber them on any machine.
            preexec_fn=lambda: os.sched_setaffinity(0, set(two)))
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    result = Launch(completed)
    assert result.returncode == 0, result
    for rank in range(4):
        # Local rank mod the CPUs: two ranks on each.
        assert result.lines(rank) == [f"held {two[rank % 2]} child {two[0]},{two[1]}"], result
