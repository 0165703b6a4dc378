"""Horovod's join() from Python with real PyTorch: a rank out of data takes part in the
others' collectives without changing them, and training on uneven data matches a replay."""

from conftest import run_all_ranks_ok


def test_ranks_that_join_early_leave_the_others_results_as_horovod_s_do_and_uneven_training_matches_a_replay():
    # Before, hvd had no join(): a script ported from Horovod died of AttributeError, and a
    # rank that ran out of batches left the others hanging in their next allreduce.
    run_all_ranks_ok(3, "join.py")


def test_join_on_one_rank_returns_at_once_with_that_rank():
    run_all_ranks_ok(1, "join.py")
