"""Failures reach Python as exceptions that say what happened: hvd.HvdError subclasses
carrying the runtime's message, TypeError and ValueError for arrays hvd cannot take."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import hvd
from conftest import clean_env, launch


def test_ranks_disagreeing_on_a_named_tensor_each_raise_a_usage_error_naming_it_and_every_rank():
    result = launch(3, "failures.py", "mismatch")
    assert result.returncode == 0, result
    for rank in range(3):
        lines = result.lines(rank)
        raised = [line for line in lines if line.startswith("raised ")]
        assert raised, result
        assert raised[0].startswith("raised HvdUsageError: tensor 'grad' was submitted differently"), raised
        for r, count in ((0, 4), (1, 5), (2, 6)):
            assert f"rank {r} asked for allreduce of {count} float32" in raised[0]
        assert "is HvdError: True" in lines and "ok" in lines


def test_ranks_giving_different_dtypes_to_a_broadcast_or_allgather_raise_a_usage_error_naming_both():
    # Sent as bytes, float32 on one rank and float64 on another went through: the broadcast
    # reinterpreted rank 0's bytes and the allgather returned each rank other garbage.
    result = launch(2, "failures.py", "dtypes")
    assert result.returncode == 0, result
    for rank in range(2):
        raised = [line for line in result.lines(rank) if line.startswith(("raised ", "returned "))]
        assert len(raised) == 3, result
        for line in raised:
            assert line.startswith("raised HvdUsageError: "), line
            assert "float32" in line and "float64" in line, line


def test_ranks_gathering_rows_of_different_shapes_each_raise_a_usage_error_naming_both_shapes():
    # Only the element counts were gathered: rank 0 read rank 1's three rows of 3 as a wrong
    # (5, 2) array and went on, while rank 1 raised.
    result = launch(2, "failures.py", "rows")
    assert result.returncode == 0, result
    for rank in range(2):
        raised = [line for line in result.lines(rank) if line.startswith(("raised ", "returned "))]
        assert len(raised) == 4, result
        for line in raised[:3]:
            assert line.startswith("raised HvdUsageError: "), line
            assert "rows of shape (2,)" in line and "rows of shape (3,)" in line, line
        assert raised[3].startswith("raised HvdUsageError: "), raised[3]
        assert "rows of shape (2, 3)" in raised[3] and "rows of shape (3, 2)" in raised[3], raised[3]


def test_ranks_giving_tensors_of_as_many_elements_in_different_shapes_each_raise_a_usage_error_naming_both():
    # Ranks must agree on the shape, not only on the element count: rank 0's (2, 6) and rank
    # 1's (3, 4) hold 12 each, and would be reduced together into results of two shapes.
    result = launch(2, "failures.py", "shapes")
    assert result.returncode == 0, result
    for rank in range(2):
        said = [line for line in result.lines(rank) if line.startswith(("raised ", "returned "))]
        assert len(said) == 11, result
        for line in said[:9]:
            assert line.startswith("raised HvdUsageError: "), line
            assert "of shape (2, 6)" in line and "of shape (3, 4)" in line, line
        assert said[9].startswith("raised HvdUsageError: "), said[9]
        assert "of shape (12,)" in said[9] and "of shape (2, 6)" in said[9], said[9]
        assert said[10] == "returned (2, 6) 24", said[10]


def test_ctrl_c_raises_keyboard_interrupt_in_a_rank_waiting_on_a_request_its_peers_never_submit():
    # Python raises KeyboardInterrupt only between calls into the runtime, so the wait is
    # many short ones; as one call the rank would wait on (the stall shutdown would end it
    # here, exit 119).
    result = launch(2, "failures.py", "interrupted", hvdrun_args=["--stall-check-shutdown-time-seconds", "10"])
    assert result.returncode == 0, result
    for rank in range(2):
        waited = [line for line in result.lines(rank) if line.startswith("interrupted after ")]
        assert waited, result
        assert float(waited[0].split()[2]) < 2.0, waited
        assert "ok" in result.lines(rank)


def test_ctrl_c_raises_keyboard_interrupt_in_a_rank_blocked_in_an_unnamed_call_its_peers_never_make():
    # The blocking calls waited in the runtime without a break, so Python never got to raise
    # KeyboardInterrupt: one Ctrl-C left a hung job running until hvdrun's kill grace, and
    # nobody saw where it hung.
    result = launch(2, "failures.py", "blocked", hvdrun_args=["--stall-check-shutdown-time-seconds", "30"])
    assert result.returncode == 0, result
    waited = [line for line in result.lines(0) if " interrupted after " in line]
    assert [line.split(" interrupted")[0] for line in waited] == [
        "allreduce", "allreduce_", "torch allreduce_", "broadcast", "allgather", "barrier"], result
    assert all(float(line.split()[-2]) < 1.5 for line in waited), waited
    assert "ok" in result.lines(0) and "ok" in result.lines(1)


def test_a_killed_rank_makes_every_survivor_raise_a_peer_error_naming_a_rank_and_its_address_fast():
    result = launch(4, "failures.py", "killed", 2, hvdrun_args=["--kill-grace", "5"], HVD_TIMEOUT=3)
    assert result.returncode == 137, result
    assert "hvdrun: error: rank 2 was killed by SIGKILL" in result.stderr
    named = set()
    for rank in (0, 1, 3):
        lines = result.lines(rank)
        raised = [line for line in lines if line.startswith("raised ")]
        assert raised, f"rank {rank} raised nothing\n{result}"
        match = re.match(r"raised HvdPeerError: .*rank (\d) \((\S+)\)", raised[0])
        assert match, raised[0]
        named.add(int(match.group(1)))
        took = float(next(line for line in lines if line.startswith("after ")).split()[1])
        assert took < 6.0, f"rank {rank} took {took} s, more than twice HVD_TIMEOUT"
    # The killed rank's neighbours see it go; others may see a neighbour that left because of it.
    assert 2 in named


@pytest.mark.parametrize("transport", ["shared memory", "tcp"])
def test_a_process_forked_after_init_keeps_its_identity_but_its_collectives_are_refused_and_its_exit_harms_none(
        transport):
    # Before, the child's calls went over its parent's connections and paired with the
    # peers' next ones: rank 1 summed the child's 100s or read NaN, and over TCP the job hung.
    extra = {"HVD_SHARED_MEMORY": "0"} if transport == "tcp" else {}
    result = launch(2, "failures.py", "forked", **extra)
    assert result.returncode == 0, result
    lines = result.lines(0)
    assert "child rank 0 size 2" in lines, result
    refused = [line for line in lines if line.startswith("child raised HvdUsageError: ")]
    assert len(refused) == 3, result  # the unnamed and named allreduce and the barrier
    for line in refused:
        assert "forked" in line and "after hvd.init()" in line, line
    assert "child call returned" in lines, result  # init(): a second init is a no-op, as always
    assert "child exit 0" in lines, result
    assert "sums 3 6 9" in lines, result
    assert "sums 3 6 9" in result.lines(1), result


@pytest.mark.parametrize("spawning", ["0", "all"])
def test_a_spawned_worker_rerunning_hvd_init_is_refused_naming_the_rank_s_process_and_the_job_goes_on(spawning):
    # Before, the worker joined as its rank: alone it failed with a stale address
    # ("connecting to rank 1 ... Connection refused"); with one per rank the workers quietly
    # formed a second world under the ranks' identities.
    result = launch(2, "failures.py", "spawned", spawning)
    assert result.returncode == 0, result
    workers = [0, 1] if spawning == "all" else [0]
    for rank in workers:
        assert "worker exit 1" in result.lines(rank), result
        refusal = (rf"\[{rank}\]<stderr>:hvd.HvdUsageError: rank {rank} of this job is already running \(pid "
                   rf"\d+ on \S+\), and this process \(pid \d+ on \S+\) has its environment")
        assert re.search(refusal, result.stderr), result
        assert "if __name__ == \"__main__\":" in result.stderr
    assert "worker ran" not in result.stdout
    assert "sums 3 6 9" in result.lines(0) and "sums 3 6 9" in result.lines(1), result


def run_alone(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=120)


def test_an_unsupported_dtype_raises_type_error_naming_the_dtype():
    hvd.init()
    supported = "supported: float32, float64, float16, bfloat16, int8, uint8, int32, int64, int16, uint16, bool$"
    with pytest.raises(TypeError, match="dtype complex128, which hvd cannot reduce or move; " + supported):
        hvd.allreduce(np.zeros(3, dtype=np.complex128))
    with pytest.raises(TypeError, match="dtype complex64"):
        hvd.allreduce(torch.zeros(3, dtype=torch.complex64))
    with pytest.raises(TypeError, match="dtype complex64"):
        hvd.broadcast(np.zeros(3, dtype=np.complex64), 0)
    with pytest.raises(TypeError, match="dtype torch.float8_e4m3fn, which hvd cannot reduce or move; " + supported):
        hvd.allreduce(torch.zeros(3, dtype=torch.float8_e4m3fn))


def test_an_in_place_call_on_a_strided_view_raises_value_error_saying_so():
    hvd.init()
    with pytest.raises(ValueError, match="not contiguous"):
        hvd.allreduce_(np.zeros((4, 4))[:, 1])
    with pytest.raises(ValueError, match="not contiguous"):
        hvd.broadcast_(torch.zeros(4, 4).t(), 0)


def test_an_in_place_call_on_a_read_only_array_raises_value_error_saying_so():
    hvd.init()
    frozen = np.zeros(3, dtype=np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        hvd.allreduce_(frozen)
    with pytest.raises(ValueError, match="read-only"):
        hvd.broadcast_(frozen, 0)
    assert hvd.allreduce(frozen).flags.writeable  # out of place it is only read


def test_arrays_in_the_other_byte_order_are_refused_in_place_and_read_out_of_place():
    hvd.init()
    swapped = np.arange(3, dtype=">f4")
    with pytest.raises(TypeError, match="byte order"):
        hvd.allreduce_(swapped)
    got = hvd.allreduce(swapped, op=hvd.Sum)
    assert got.dtype == np.float32 and got.tolist() == [0.0, 1.0, 2.0]
    assert hvd.allgather(np.arange(2, dtype=">i8")).tolist() == [0, 1]


def test_arrays_of_objects_or_strings_and_a_wrong_name_or_root_type_raise_type_error_saying_which():
    hvd.init()
    with pytest.raises(TypeError, match="dtype object"):
        hvd.allreduce(object())
    with pytest.raises(TypeError, match="dtype <U1"):
        hvd.allgather(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="name must be a str, not int"):
        hvd.allreduce(np.ones(3), name=5)
    with pytest.raises(TypeError, match="root_rank must be an int, not str"):
        hvd.broadcast(np.ones(3), "0")


def test_the_compiled_allreduce_names_itself_in_argument_errors():
    with pytest.raises(TypeError, match=r"^allreduce_\(\) got an unexpected keyword argument 'bogus'"):
        hvd.allreduce_(np.zeros(3), bogus=1)
    with pytest.raises(TypeError, match=r"^allreduce_\(\) missing 1 required positional argument: 'tensor'"):
        hvd.allreduce_()


def test_a_bad_root_raises_an_invalid_argument_error_that_is_also_a_value_error():
    hvd.init()
    with pytest.raises(hvd.HvdInvalidArgumentError, match="root 5 is not a rank") as caught:
        hvd.broadcast(np.zeros(2), 5)
    assert isinstance(caught.value, ValueError) and caught.value.code == "invalid argument"


def test_a_handle_synchronized_twice_raises_a_usage_error():
    hvd.init()
    handle = hvd.allreduce_async(np.ones(2), name="twice")
    hvd.synchronize(handle)
    with pytest.raises(hvd.HvdUsageError, match="not pending"):
        hvd.synchronize(handle)


def test_topology_before_init_raises_value_error_and_collectives_raise_hvd_error():
    completed = run_alone(
        "import hvd, numpy as np\n"
        "try: hvd.rank()\n"
        "except ValueError as e: print('ValueError', e)\n"
        "try: hvd.allreduce(np.ones(2))\n"
        "except hvd.HvdError as e: print(type(e).__name__, e)\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert "ValueError hvd has not been initialized; call hvd.init() first" in completed.stdout
    assert re.search(r"^Hvd\w*Error .*init", completed.stdout, re.M), completed.stdout


def test_calls_after_shutdown_name_the_shutdown_not_a_missing_init():
    completed = run_alone(
        "import hvd, numpy as np\n"
        "hvd.init()\n"
        "hvd.shutdown()\n"
        "try: hvd.rank()\n"
        "except ValueError as e: print('ValueError', e)\n"
        "try: hvd.allreduce(np.ones(2))\n"
        "except hvd.HvdError as e: print(type(e).__name__, e)\n"
        "hvd.init()\n"
        "print('again', hvd.rank(), hvd.allreduce(np.ones(2), op=hvd.Sum).tolist())\n"
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "ValueError hvd was shut down (hvd.shutdown()) before this call; call hvd.init() again to rejoin"
    assert lines[1].startswith("HvdUsageError the runtime was shut down (hvd.shutdown()) before this call"), lines
    assert lines[2] == "again 0 [1.0, 1.0]", lines


def test_copies_torchrun_started_fail_init_saying_each_would_train_alone_and_naming_hvdrun(tmp_path):
    # Real torchrun: before, each copy became rank 0 of 1 and trained alone, silently.
    script = tmp_path / "train.py"
    # Each copy waits (up to 10 s) for the other to have been refused too before it exits:
    # torchrun stops the copies left once one fails, sometimes before they had printed.
    script.write_text(
        "import os, time, hvd\n"
        f"marks = {str(tmp_path)!r}\n"
        "try:\n"
        "    hvd.init()\n"
        "except hvd.HvdUsageError as e:\n"
        "    os.write(1, f'refused: {e}\\n'.encode())  # one write: the copies share the pipe\n"
        "    open(os.path.join(marks, 'refused.' + os.environ['LOCAL_RANK']), 'w').close()\n"
        "    deadline = time.time() + 10\n"
        "    while len([n for n in os.listdir(marks) if n.startswith('refused.')]) < 2 and time.time() < deadline:\n"
        "        time.sleep(0.01)\n"
        "    raise SystemExit(3)\n"
        "print('trained alone as', hvd.rank(), hvd.size())\n"
    )
    torchrun = Path(sys.executable).with_name("torchrun")
    completed = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "2", str(script)],
                               capture_output=True, text=True, env=clean_env(), timeout=180)
    assert completed.returncode != 0, completed.stdout + completed.stderr
    assert completed.stdout.count("refused: WORLD_SIZE=2 says this process is one of that many copies") == 2, \
        completed.stdout
    assert "hvdrun --nproc-per-node 2 python" in completed.stdout
    assert "trained alone" not in completed.stdout
