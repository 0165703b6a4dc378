"""hvd.torch with real PyTorch: DistributedOptimizer's averaging, accumulation, clipping,
compression and unused parameters; the broadcasts of parameters and optimizer state."""

from conftest import run_all_ranks_ok


def test_distributed_optimizer_and_broadcasts_match_references_replayed_from_every_rank_on_three_ranks():
    run_all_ranks_ok(3, "torch_optimizer.py")


def test_the_same_program_on_one_rank_needs_no_hooks_and_still_holds():
    run_all_ranks_ok(1, "torch_optimizer.py")
