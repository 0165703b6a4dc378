"""PyTorch Lightning and Accelerate under `hvdrun -np 2` on one machine, as users run them:
no hvd in the script, the library finds its world from what hvdrun exports. Every rank must
be the one hvdrun started it as and all must end on the same loss. (The Slurm side, batch
jobs of 2x1 and 2x2 tasks, is tests/slurm/cluster_training_libraries_test.cc.)"""

import re

import pytest

from conftest import launch

pytest.importorskip("pytorch_lightning", reason="README's test command installs pytorch-lightning")
pytest.importorskip("accelerate", reason="README's test command installs accelerate")


def fields_by_rank(result, np, first_key):
    seen = {}
    for rank in range(np):
        lines = [line for line in result.lines(rank) if line.startswith(first_key + "=")]
        assert len(lines) == 1, result
        seen[rank] = dict(re.findall(r"(\w+)=(\S+)", lines[0]))
    return seen


def test_lightning_ddp_on_two_ranks_takes_hvdrun_s_ranks_and_ends_on_one_loss(tmp_path):
    result = launch(2, "lightning_train.py", 1, 2, tmp_path)
    assert result.returncode == 0, result
    seen = fields_by_rank(result, 2, "global_rank")
    for rank, f in seen.items():
        assert (f["global_rank"], f["local_rank"], f["world_size"], f["node_rank"]) == (str(rank), str(rank), "2",
                                                                                       "0"), result
        assert f["environment"] == "TorchElasticEnvironment", result
    assert seen[0]["loss"] == seen[1]["loss"], result


def test_lightning_refuses_devices_larger_than_the_ranks_hvdrun_started(tmp_path):
    # devices=4 on 2 ranks: Lightning must not train a world that does not exist.
    result = launch(2, "lightning_train.py", 1, 4, tmp_path, timeout=120)
    assert result.returncode != 0, result
    assert "hvdrun: error: rank" in result.stderr, result
    assert "but the product (4 * 1) does not match the world size (2)" in result.stderr, result


def test_accelerate_on_two_ranks_takes_hvdrun_s_ranks_and_ends_on_one_loss():
    result = launch(2, "accelerate_train.py")
    assert result.returncode == 0, result
    seen = fields_by_rank(result, 2, "process_index")
    for rank, f in seen.items():
        assert (f["process_index"], f["local_process_index"], f["num_processes"]) == (str(rank), str(rank), "2"), result
        assert f["distributed_type"] == "MULTI_CPU", result
    assert seen[0]["loss"] == seen[1]["loss"], result
