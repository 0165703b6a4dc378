"""hvd.torch with real PyTorch: DistributedOptimizer's averaging, accumulation, clipping,
compression and unused parameters; the broadcasts of parameters and optimizer state."""

import pytest
from conftest import RANKS, launch, run_all_ranks_ok


def test_distributed_optimizer_and_broadcasts_match_references_replayed_from_every_rank_on_three_ranks():
    run_all_ranks_ok(3, "torch_optimizer.py")


def test_the_same_program_on_one_rank_needs_no_hooks_and_still_holds():
    run_all_ranks_ok(1, "torch_optimizer.py")


def test_sync_batch_norm_normalizes_uneven_batches_as_one_batch_norm_over_all_of_them_on_three_ranks():
    # Before, hvd.torch had no SyncBatchNorm (AttributeError in scripts ported from Horovod).
    run_all_ranks_ok(3, "torch_sync_batch_norm.py")


def test_sync_batch_norm_alone_is_plain_batch_norm():
    run_all_ranks_ok(1, "torch_sync_batch_norm.py")


def test_gradients_flow_back_through_allreduce_allgather_and_broadcast_as_in_horovod_on_three_ranks():
    # Before, the results of hvd.torch's collectives had no grad_fn: the gradient through
    # them was silently dropped, or backward raised that nothing required grad.
    run_all_ranks_ok(3, "torch_autograd.py")


def test_a_rank_that_raises_under_torchs_record_has_its_exception_and_line_in_hvdruns_summary():
    result = launch(3, "torch_record.py", timeout=120)
    assert result.returncode == 1, result
    source = RANKS / "torch_record.py"
    line = next(i for i, text in enumerate(source.read_text().splitlines(), 1) if "raise ValueError" in text)
    assert ("  rank 1 raised (recorded by torch's @record): ValueError: batch 7 has 3 columns, the model wants 4\n"
            f"    at {source}:{line} in load_batch\n") in result.stderr, result
    assert "hvdrun stopped 2 other rank(s) of 3; exit code 1" in result.stderr, result


def _cuda_available():
    import torch

    return torch.cuda.is_available()


def test_a_gathered_result_handed_over_as_a_torch_tensor_is_viewed_in_place_as_the_tensors_rows():
    # A CUDA tensor's allgather or alltoall result comes from the runtime as a uint8 torch
    # tensor on the GPU (DLPack), which must be viewed as the rows, not copied or moved: a CPU
    # tensor stands in for it here, so the path runs without a GPU (torch_cuda.py runs it on one).
    import numpy as np
    import torch

    from hvd import _arrays

    like = torch.zeros((2, 3), dtype=torch.float64)
    rows = torch.arange(12, dtype=torch.float64).reshape(4, 3)
    data = rows.flatten().view(torch.uint8)
    out = _arrays.from_gathered(data, [6, 6], like)
    assert out.dtype == torch.float64 and out.shape == (4, 3) and torch.equal(out, rows)
    assert out.data_ptr() == data.data_ptr(), "the result was copied"
    empty = _arrays.from_gathered(torch.empty(0, dtype=torch.uint8), [0, 0], like)
    assert empty.shape == (0, 3) and empty.dtype == torch.float64
    # Host results still come as NumPy bytes.
    host = _arrays.from_gathered(rows.numpy().reshape(-1).view(np.uint8), [6, 6], like)
    assert torch.equal(host, rows)


# hvd.torch too: the CUDA rank script (torch_cuda.py) calls both through it, and on its first
# run on a GPU (an H200, 2026-11-27) it died of AttributeError: hvd.torch had neither.
@pytest.mark.parametrize("module", ["hvd", "hvd.torch"])
def test_without_a_gpu_cuda_tensors_have_no_backend_and_the_package_says_so(module):
    import ctypes
    import subprocess
    import sys

    from conftest import clean_env

    code = (f"import {module} as hvd; hvd.init(); print(hvd.gpu_operations_backend())\n"
            "try:\n    hvd.set_gpu_stream(0)\nexcept hvd.HvdError as e:\n    print('refused:', e)\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert completed.returncode == 0, completed.stderr
    backend, *rest = completed.stdout.strip().splitlines()
    assert backend in ("nccl", "cuda-staged", "none")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        assert backend == "none"  # no driver here
        assert rest and rest[0].startswith("refused: GPU tensors cannot be moved here: no GPU visible"), rest


def test_before_any_gpu_collective_hvd_cannot_order_its_gpu_work_after_a_stream_and_says_so():
    # hvd.torch hands a CUDA tensor over by making hvd's GPU stream wait for torch's (an
    # event: the CPU goes on). Until hvd has a GPU stream of its own (its first GPU
    # collective), or where it has none, or for a set this rank is not in, it answers False
    # and the package synchronizes torch's stream itself, as it always did before.
    import subprocess
    import sys

    from conftest import clean_env

    code = ("import hvd; hvd.init()\n"
            "print(hvd._hvd.wait_gpu_stream(0), hvd._hvd.wait_gpu_stream(0, 7))\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["False", "False"], completed.stdout


@pytest.mark.skipif(not _cuda_available(), reason="no CUDA GPU visible to torch here")
def test_cuda_tensors_go_through_nccl_on_one_rank():
    result = launch(1, "torch_cuda.py")
    assert result.returncode == 0, result
    assert result.lines(0) == ["ok nccl"], result


@pytest.mark.skipif(not _cuda_available(), reason="no CUDA GPU visible to torch here")
def test_cuda_tensors_take_the_staged_path_with_two_ranks_sharing_a_gpu():
    result = launch(2, "torch_cuda.py", hvdrun_args=["--oversubscribe-gpus"], HOROVOD_GPU_OPERATIONS="cpu")
    assert result.returncode == 0, result
    assert result.lines(0) == ["ok cuda-staged"] and result.lines(1) == ["ok cuda-staged"], result


def test_process_sets_run_every_collective_among_their_members_alone_with_numpy_and_torch_on_four_ranks():
    # Before, hvd had no process sets: hvd.ProcessSet, add_process_set and process_set= were
    # AttributeErrors and TypeErrors in scripts written for Horovod's.
    run_all_ranks_ok(4, "process_sets.py")


def test_every_public_name_of_hvd_is_in_hvd_torch_too():
    # hvd.torch is what ported scripts import; the CUDA rank script found set_gpu_stream
    # missing there only on its first run on a GPU.
    import hvd
    import hvd.torch

    frameworks = {"torch", "tensorflow", "keras", "elastic"}
    public = {n for n in dir(hvd) if not n.startswith("_") and n not in frameworks}
    assert sorted(n for n in public if not hasattr(hvd.torch, n)) == []
