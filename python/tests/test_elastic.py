"""Horovod's elastic API (hvd.torch.elastic) on a fixed set of ranks, with real PyTorch."""

from conftest import run_all_ranks_ok


def test_a_script_written_for_horovods_elastic_api_runs_on_a_fixed_set_of_ranks():
    # Before, `hvd.elastic` was an AttributeError: an elastic script could not start at all.
    run_all_ranks_ok(3, "torch_elastic.py")


def test_the_elastic_api_alone_is_a_world_of_one():
    run_all_ranks_ok(1, "torch_elastic.py")
