#!/bin/bash
# Job script written by hvdrun 1.2.3 (hvdrun sbatch). When the job starts, hvdrun
# reads the allocation, starts one rank per task with its GPU, and turns the signal below
# into the ranks' preemption flag.
#SBATCH --account=proj-x
#SBATCH --constraint=ib
#SBATCH --cpus-per-task=8
#SBATCH --error=%x-%j.err
#SBATCH --exclusive
#SBATCH --gpus-per-node=4
#SBATCH --job-name="resnet 50"
#SBATCH --mem=200G
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=4
#SBATCH --open-mode=append
#SBATCH --output=logs/%x-%j.out
#SBATCH --partition=a100
#SBATCH --qos=high
#SBATCH --requeue
#SBATCH --signal=B:USR2@90
#SBATCH --time=2:00:00

set -eo pipefail
module load cuda/12.2
module load nccl
export NCCL_DEBUG=WARN
export TAG='it'\''s $HOME'
source '/work/my env/bin/activate'
ulimit -n 65536

# exec: hvdrun becomes the batch shell, so the B: signal reaches it, and its exit code
# (the first failing rank's) is the job's.
exec /opt/hvdrun/bin/hvdrun --no-config --num-proc 16 --requeue --preempt-grace 45 --timestamp-output -- python train.py --lr 0.1
