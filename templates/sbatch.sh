#!/bin/bash
# Job script written by hvdrun {{version}} (hvdrun sbatch). When the job starts, hvdrun
# reads the allocation, starts one rank per task with its GPU, and turns the signal below
# into the ranks' preemption flag.
{{directives}}

set -eo pipefail
{{setup}}

# exec: hvdrun becomes the batch shell, so the B: signal reaches it, and its exit code
# (the first failing rank's) is the job's.
{{launch}}
