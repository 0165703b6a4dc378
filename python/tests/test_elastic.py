"""Horovod's elastic API (hvd.torch.elastic) with real PyTorch: on a fixed set of ranks, and in
hvdrun's elastic jobs (--min-np), whose ranks go on without the ones that fail."""

import re
import time

from conftest import launch, run_all_ranks_ok


def test_a_script_written_for_horovods_elastic_api_runs_on_a_fixed_set_of_ranks():
    # Before, `hvd.elastic` was an AttributeError: an elastic script could not start at all.
    run_all_ranks_ok(3, "torch_elastic.py")


def test_the_elastic_api_alone_is_a_world_of_one():
    run_all_ranks_ok(1, "torch_elastic.py")


def _elastic(np_, min_np, victims, *more_args):
    return launch(np_, "torch_elastic_shrink.py", hvdrun_args=("--min-np", str(min_np), *more_args),
                  ELASTIC_VICTIMS=victims)


def _finished(result, worker, rank, size):
    """What worker printed at the end: its last world's rank and size, and where it started."""
    lines = [line for line in result.lines(worker) if line.startswith("ok ")]
    assert len(lines) == 1, f"worker {worker} did not finish\n{result}"
    fields = dict(re.findall(r"(\w+)=(\[[^=]*\]|\S+)", lines[0]))
    assert (fields["worker"], fields["rank"], fields["size"]) == (str(worker), str(rank), str(size)), result
    return fields


def test_an_elastic_job_goes_on_without_a_rank_killed_mid_batch_from_its_last_commit():
    # Before, --min-np was refused: a rank's failure ended the job, and the others with it.
    result = _elastic(4, 2, "1@3")
    assert result.returncode == 0, result
    assert ("hvdrun: rank 1 was killed by SIGKILL; the other 3 rank(s) go on without it as the job's world 1 "
            "(--min-np 2), numbered 0-2 in the order of their first ranks") in result.stderr, result
    assert "hvdrun: the elastic job went on without rank(s) 1 after they failed" in result.stderr, result
    for worker, rank in ((0, 0), (2, 1), (3, 2)):
        fields = _finished(result, worker, rank, 3)
        # The batch rank 1 died in was begun again from the last commit, in the new world.
        assert fields["starts"] == "[0, 3]", result
        assert fields["resets"] == f"[({rank}, 3)]", result
    assert not result.lines(1), result


def test_an_elastic_job_survives_a_second_failure_while_its_world_re_forms():
    # Rank 2 dies in its reset callback: the new world's sync fails, and it re-forms again.
    result = _elastic(4, 2, "1@3,2@reset")
    assert result.returncode == 0, result
    assert "the other 2 rank(s) go on without it as the job's world 2" in result.stderr, result
    for worker, rank in ((0, 0), (3, 1)):
        fields = _finished(result, worker, rank, 2)
        assert fields["resets"].endswith(f"({rank}, 2)]"), result


def test_a_rank_frozen_mid_batch_is_killed_when_a_peer_gives_up_on_it_and_the_job_goes_on():
    # Before, the peer that timed out left, and the others re-formed into a world with the
    # frozen rank, waiting 10 minutes (the elastic timeout) for it. Now hvdrun fails a rank
    # frozen for HVD_TIMEOUT, and the peers that timed out on it re-form without it.
    started = time.monotonic()
    result = launch(3, "torch_elastic_shrink.py", hvdrun_args=("--min-np", "1"), ELASTIC_VICTIMS="2@stop3",
                    HVD_TIMEOUT="3")
    assert result.returncode == 0, result
    assert "hvdrun: rank 2 was frozen (stopped, state T) " in result.stderr, result
    assert ", and hvdrun killed it; the other 2 rank(s) go on without it" in result.stderr, result
    for worker in (0, 1):  # both re-formed, none lost with it
        _finished(result, worker, worker, 2)
    assert time.monotonic() - started < 60, result


def test_rank_0_failing_leaves_the_next_rank_to_lead_the_world():
    result = _elastic(3, 2, "0@2")
    assert result.returncode == 0, result
    for worker, rank in ((1, 0), (2, 1)):
        assert _finished(result, worker, rank, 2)["starts"] == "[0, 2]", result


def test_an_elastic_job_ends_when_fewer_than_min_np_ranks_would_be_left():
    result = _elastic(3, 3, "1@3")
    assert result.returncode == 128 + 9, result
    assert ("hvdrun: rank 1 was killed by SIGKILL, and the elastic job cannot go on without it: only 2 rank(s) "
            "would be left, fewer than --min-np 3") in result.stderr, result
    assert "hvdrun: error: rank 1 was killed by SIGKILL" in result.stderr, result


def test_an_elastic_job_ends_once_its_world_has_changed_reset_limit_times():
    result = _elastic(4, 1, "1@3,2@5", "--reset-limit", "1")
    assert result.returncode == 128 + 9, result
    assert ("rank 2 was killed by SIGKILL, and the elastic job cannot go on without it: the world has changed 1 "
            "time(s) already (--reset-limit 1)") in result.stderr, result


def test_a_job_grows_onto_the_slots_its_discovery_script_adds_and_the_new_ranks_start_from_rank_0s_state(tmp_path):
    # Before, --host-discovery-script and --max-np were refused: an elastic job never grew.
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    script = tmp_path / "discover.sh"
    script.write_text('#!/bin/sh\ncat "$DISCOVERY_FILE"\n')
    script.chmod(0o755)
    result = launch(2, "torch_elastic_grow.py", hvdrun_args=("--max-np", "4", "--host-discovery-script", str(script)),
                    DISCOVERY_FILE=hosts)
    assert result.returncode == 0, result
    assert "2 more slot(s): started rank(s) 2-3 there; the job's world 1 has 4 rank(s)" in result.stderr, result
    running = {worker: _finished(result, worker, worker, 4) for worker in range(4)}
    # The running ranks left for the new world at a commit, without a restore; the new
    # ones began where rank 0 was then.
    for worker in (0, 1):
        assert running[worker]["resets"] == f"[({worker}, 4)]", result
    resumed_at = running[0]["starts"].strip("[]").split(", ")[1]
    assert int(resumed_at) > 5, result
    for worker in (2, 3):
        assert running[worker]["resets"] == "[]" and running[worker]["starts"] == f"[{resumed_at}]", result
