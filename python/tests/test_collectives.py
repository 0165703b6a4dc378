"""The hvd package's collectives across real processes, against a NumPy reference."""

import subprocess
import sys

from conftest import RANKS, clean_env, run_all_ranks_ok


def test_every_dtype_op_and_shape_matches_numpy_on_three_ranks():
    run_all_ranks_ok(3, "collectives.py")


def test_the_same_checks_pass_on_four_ranks_through_open_mpi():
    run_all_ranks_ok(4, "collectives.py", hvdrun_args=["--mpi"], HOROVOD_CPU_OPERATIONS="mpi")


def test_a_program_started_without_hvdrun_is_a_world_of_one():
    completed = subprocess.run([sys.executable, str(RANKS / "collectives.py")], capture_output=True, text=True,
                               env=clean_env(), timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


def test_async_handles_from_several_python_threads_complete_with_the_right_results():
    run_all_ranks_ok(3, "threads.py")
