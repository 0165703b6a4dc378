#!/bin/bash
# Job script written by hvdrun 1.2.3 (hvdrun sbatch). When the job starts, hvdrun
# reads the allocation, starts one rank per task with its GPU, and turns the signal below
# into the ranks' preemption flag.
#SBATCH --error=%x-%j.err
#SBATCH --job-name="my prog"
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --output=%x-%j.out
#SBATCH --signal=B:USR2@90

set -eo pipefail

# exec: hvdrun becomes the batch shell, so the B: signal reaches it, and its exit code
# (the first failing rank's) is the job's.
exec /opt/hvdrun/bin/hvdrun --no-config -- './my prog' 'it'\''s' '$HOME' '`id`' 'a
b' '"q"' '' 'x;rm -rf /' '--flag=$(date)'
