"""Adasum (hvd.Adasum, Horovod's): the allreduce and hvd.torch's delta optimizer across real
processes, against NumPy replays of every rank; hvd.tensorflow's tape is in test_tensorflow."""

from conftest import run_all_ranks_ok


def test_adasum_allreduce_matches_the_numpy_tree_on_three_ranks_folded_and_on_four():
    run_all_ranks_ok(3, "adasum.py")
    run_all_ranks_ok(4, "adasum.py")


def test_adasum_allreduce_runs_through_open_mpi_alike_on_four_ranks():
    run_all_ranks_ok(4, "adasum.py", hvdrun_args=["--mpi"], HOROVOD_CPU_OPERATIONS="mpi")


def test_the_delta_optimizer_moves_parameters_by_the_tree_of_every_ranks_own_steps_on_three_ranks():
    run_all_ranks_ok(3, "torch_adasum.py")
