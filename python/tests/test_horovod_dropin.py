"""A program written for Horovod runs on hvd with only its import changed: Horovod's
exception types, scaling rules, gradients, join rules, arguments, module paths and
settings, and no rank left waiting when the ranks' paths through a program diverge."""

import re

from conftest import launch, run_all_ranks_ok


def test_horovod_s_behaviours_hold_in_hvd_torch_on_two_and_three_ranks():
    for np in (2, 3):
        result = run_all_ranks_ok(np, "horovod_dropin.py", "torch")
        for rank in range(np):
            assert len([line for line in result.lines(rank) if line.startswith("held: ")]) == 8, result


def test_ranks_whose_paths_diverged_and_that_init_again_meet_again_without_waiting():
    # Rank 0 fails a test before its barrier, so its tear-down barrier meets rank 1's in-test
    # one; it shuts down and inits for the next test. Rank 1's tear-down barrier fails at
    # once naming rank 0, and its init rejoins rank 0's world instead of keeping a stopped one.
    result = launch(2, "horovod_dropin.py", "diverged", timeout=60, HVD_TIMEOUT=10)
    assert result.returncode == 0, result
    rank0, rank1 = result.lines(0), result.lines(1)
    assert re.match(r"tear-down barrier returned after 0\.\d s", rank0[0]), result
    assert re.match(r"in-test barrier returned after 0\.\d s", rank1[0]), result
    assert re.match(r"tear-down barrier raised HvdPeerError: rank 0 shut hvd down .* after [0-2]\.\d s", rank1[1]), result
    for lines in (rank0, rank1):
        assert any(re.match(r"init returned after \d\.\d s", line) for line in lines), result
        assert any(re.match(r"allreduce returned after \d\.\d s", line) for line in lines), result
        assert "sum [2.0, 2.0]" in lines and "ok" in lines, result


def test_a_rank_that_inits_again_into_a_world_its_peer_never_rejoins_fails_within_hvd_timeout_naming_it():
    result = launch(2, "horovod_dropin.py", "abandoned", timeout=60, HVD_TIMEOUT=3)
    assert result.returncode == 0, result
    line = next(line for line in result.lines(0) if line.startswith("init "))
    assert line.startswith("init raised HvdTimeoutError: "), result
    assert "waiting for rank 1's address" in line and "every rank must call init() again" in line, line
    seconds = float(re.search(r"after (\d+\.\d) s$", line).group(1))
    assert 2.5 <= seconds < 8, line


def test_horovod_s_dynamic_timeline_and_gloo_settings_are_taken_with_one_note(tmp_path):
    result = launch(2, "horovod_dropin.py", "settings", tmp_path, HOROVOD_TIMELINE="DYNAMIC",
                    HOROVOD_CPU_OPERATIONS="gloo")
    assert result.returncode == 0, result
    for rank in range(2):
        assert "ok" in result.lines(rank), result
    note = "HOROVOD_CPU_OPERATIONS=gloo: hvd has no gloo; CPU tensors go through hvd's own ring (tcp) instead"
    assert (result.stdout + result.stderr).count(note) == 1, result


def test_hvd_keras_and_hvd_tensorflow_take_horovod_s_signatures_callbacks_and_compressor_on_two_ranks():
    run_all_ranks_ok(2, "horovod_dropin.py", "keras")
