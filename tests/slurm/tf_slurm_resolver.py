"""Run by cluster_launch_test.cc on every rank of `hvdrun --tf-config` inside the Slurm test
cluster: compares hvdrun's TF_CONFIG with the cluster spec TensorFlow's own
SlurmClusterResolver computes from the same srun step, and prints one line per rank:
    rank R: agree <task type> <index> <workers>
or  rank R: DIFFER ours=<json> slurm=<json>
The resolver is given what it cannot find here: no GPUs (it would run nvidia-smi), so one
"GPU" per task, and hvdrun's port base (hvdrun's ports are base + local rank, as its).
"""
import json
import os
import sys

from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import SlurmClusterResolver

ours = json.loads(os.environ["TF_CONFIG"])
rank = int(os.environ["SLURM_PROCID"])
base = min(int(address.rsplit(":", 1)[1]) for tasks in ours["cluster"].values() for address in tasks)
per_node = max(int(n.split("(")[0]) for n in os.environ["SLURM_STEP_TASKS_PER_NODE"].split(","))
resolver = SlurmClusterResolver(port_base=base, gpus_per_node=per_node, gpus_per_task=1, auto_set_gpu=False)
theirs = {"cluster": resolver.cluster_spec().as_dict(), "task": {"type": resolver.task_type, "index": resolver.task_id}}
if theirs == ours:
    print(f"rank {rank}: agree {ours['task']['type']} {ours['task']['index']} {','.join(ours['cluster']['worker'])}")
else:
    print(f"rank {rank}: DIFFER ours={json.dumps(ours, sort_keys=True)} slurm={json.dumps(theirs, sort_keys=True)}")
sys.stdout.flush()
