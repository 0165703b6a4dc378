"""Horovod's start_timeline / stop_timeline from Python: each rank's trace holds what ran
between them and nothing else, and hvdrun's merge joins the ranks' files."""

import json
import subprocess

from conftest import hvdrun_path, run_all_ranks_ok


def names(path):
    events = json.loads(path.read_text())
    return {e.get("args", {}).get("name") for e in events if e.get("ph") == "M"}, events


def test_a_timeline_started_and_stopped_at_run_time_holds_only_what_ran_between_on_every_rank(tmp_path):
    # Before, hvd had no start_timeline (AttributeError); the trace was all or nothing.
    run_all_ranks_ok(2, "timeline_control.py", tmp_path)
    for rank_file in ("first.json", "first.rank1.json"):
        tracks, events = names(tmp_path / rank_file)
        assert "recorded" in tracks, (rank_file, tracks)
        assert not tracks & {"before", "between", "marked"}, (rank_file, tracks)
        assert sum(e.get("name") == "ALLREDUCE" for e in events) == 3, rank_file
        assert not any(e.get("name") == "CYCLE_START" for e in events), rank_file
    for rank_file in ("second.json", "second.rank1.json"):
        tracks, events = names(tmp_path / rank_file)
        assert "marked" in tracks and "recorded" not in tracks, (rank_file, tracks)
        assert any(e.get("name") == "CYCLE_START" for e in events), rank_file
    assert not (tmp_path / "other.json").exists()
    assert not tmp_path.with_name(tmp_path.name + ".rank1").exists()
    merged = tmp_path / "merged.json"
    subprocess.run([hvdrun_path(), "timeline", "merge", "-o", merged, tmp_path / "first.json",
                    tmp_path / "first.rank1.json"], check=True)
    processes = {e["args"]["name"] for e in json.loads(merged.read_text()) if e.get("name") == "process_name"}
    assert processes == {"rank 0", "rank 1"}, processes
