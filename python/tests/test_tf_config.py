"""hvdrun's TF_CONFIG, read by real TensorFlow: MultiWorkerMirroredStrategy trains with
it, and TFConfigClusterResolver finds the roles hvdrun planned."""

import json
import os
import re
import subprocess
import sys

from conftest import RANKS, Launch, clean_env, hvdrun_path, launch


def test_multi_worker_mirrored_strategy_trains_on_every_rank_with_the_variables_in_agreement():
    for np_ in (2, 4):
        result = launch(np_, "tf_config_mwms.py", hvdrun_args=["--tf-config"], timeout=300)
        assert result.returncode == 0, result
        lines = [line for r in range(np_) for line in result.lines(r) if line.startswith("task ")]
        assert len(lines) == np_, result
        tasks = sorted(re.match(r"task (\S+) (\d+)", line).groups() for line in lines)
        assert tasks == sorted(("worker", str(i)) for i in range(np_))
        assert {re.search(r"replicas (\d+)", line).group(1) for line in lines} == {str(np_)}
        assert len({re.search(r"checksum (\S+)", line).group(1) for line in lines}) == 1, lines


def planned(np_, flags, rank):
    command = [hvdrun_path(), "-np", str(np_), *flags, "--dry-run", "--format", "tf_config", "--rank", str(rank), "true"]
    completed = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=30)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def hosts_of(cluster):
    return {role: [address.rsplit(":", 1)[0] for address in addresses] for role, addresses in cluster.items()}


def test_tf_config_clusterresolver_sees_the_chief_ps_workers_and_evaluator_hvdrun_planned():
    np_, flags = 5, ["--tf-config", "--tf-ps", "1", "--tf-chief", "--tf-evaluator"]
    result = launch(np_, "tf_config_resolve.py", hvdrun_args=flags)
    assert result.returncode == 0, result
    roles, clusters = [], []
    for rank in range(np_):
        seen = json.loads(result.lines(rank)[-1])
        plan = planned(np_, flags, rank)
        assert seen["type"] == plan["task"]["type"] and seen["index"] == plan["task"]["index"], (rank, seen, plan)
        # Ports are picked free at each launch, so only the hosts are compared with the dry run.
        assert hosts_of(seen["cluster"]) == hosts_of(plan["cluster"]), (rank, seen, plan)
        roles.append((seen["type"], seen["index"]))
        clusters.append(seen["cluster"])
    assert all(c == clusters[0] for c in clusters), "ranks were given different clusters"
    assert sorted(roles) == [("chief", 0), ("evaluator", 0), ("ps", 0), ("worker", 0), ("worker", 1)]


def test_a_parameter_server_job_ends_with_exit_0_when_its_chief_is_done():
    # Workers and the ps wait in server.join() forever, as TensorFlow's tutorial has them;
    # before hvdrun knew the chief's end is the job's, this ran into the timeout.
    result = launch(4, "tf_ps_train.py", hvdrun_args=["--tf-config", "--tf-ps", "1", "--tf-chief"], timeout=150)
    assert result.returncode == 0, result
    assert any(line.startswith("chief trained 20 steps, loss ") for line in result.lines(0)), result
    assert ("hvdrun: the chief finished (exit 0), so the job is done: stopped its 3 parameter server, worker and "
            "evaluator rank(s)\n") in result.stderr, result


def test_a_parameter_server_job_on_one_cpu_trains_where_tensorflow_alone_would_hang():
    # TensorFlow sizes its inter-op pool from the CPUs a process may use; a worker with a
    # pool of one never ran the chief's first step (hvdrun --bind-to with a rank a CPU, or a
    # job confined to one CPU as here). hvdrun gives such ranks two inter-op threads.
    one_cpu = min(os.sched_getaffinity(0))
    command = [hvdrun_path(), "-np", "4", "--tf-config", "--tf-ps", "1", "--tf-chief", sys.executable,
               str(RANKS / "tf_ps_train.py")]
    env = clean_env()
    env.pop("TF_NUM_INTEROP_THREADS", None)  # hvdrun's choice is what is tested
    result = Launch(subprocess.run(command, capture_output=True, text=True, timeout=150, env=env,
                                   preexec_fn=lambda: os.sched_setaffinity(0, {one_cpu})))
    assert result.returncode == 0, result
    assert any(line.startswith("chief trained 20 steps, loss ") for line in result.lines(0)), result
