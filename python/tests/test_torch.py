"""hvd.torch with real PyTorch: DistributedOptimizer's averaging, accumulation, clipping,
compression and unused parameters; the broadcasts of parameters and optimizer state."""

from conftest import RANKS, launch, run_all_ranks_ok


def test_distributed_optimizer_and_broadcasts_match_references_replayed_from_every_rank_on_three_ranks():
    run_all_ranks_ok(3, "torch_optimizer.py")


def test_the_same_program_on_one_rank_needs_no_hooks_and_still_holds():
    run_all_ranks_ok(1, "torch_optimizer.py")


def test_a_rank_that_raises_under_torchs_record_has_its_exception_and_line_in_hvdruns_summary():
    result = launch(3, "torch_record.py", timeout=120)
    assert result.returncode == 1, result
    source = RANKS / "torch_record.py"
    line = next(i for i, text in enumerate(source.read_text().splitlines(), 1) if "raise ValueError" in text)
    assert ("  rank 1 raised (recorded by torch's @record): ValueError: batch 7 has 3 columns, the model wants 4\n"
            f"    at {source}:{line} in load_batch\n") in result.stderr, result
    assert "hvdrun stopped 2 other rank(s) of 3; exit code 1" in result.stderr, result
