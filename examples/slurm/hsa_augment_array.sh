#!/usr/bin/env bash
# HSA over a trajectory stream as a Slurm job array: array task K of N runs `hsa-augment --shard K/N` on
# the same input (records go to shards by a hash of their id) and writes its own part; concatenate the
# parts when the array is done (`cat OUT.part-* > OUT`). Every JSONL stage takes --shard K/N the same way.
#
#   sbatch --array=0-3 examples/slurm/hsa_augment_array.sh HARNESS INPUT OUT
#
# Locally, without Slurm (what examples/shard_check.sh does):
#   for k in 0 1 2 3; do SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_TASK_COUNT=4 examples/slurm/hsa_augment_array.sh ...; done
#SBATCH --job-name=hsa-augment
#SBATCH --cpus-per-task=2
#SBATCH --time=01:00:00
set -euo pipefail
HARNESS=$1 INPUT=$2 OUT=$3
BIN=${BIN:-target/release}
: "${SLURM_ARRAY_TASK_ID:?run as a Slurm array (sbatch --array=0-N) or set SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT}"
: "${SLURM_ARRAY_TASK_COUNT:?set SLURM_ARRAY_TASK_COUNT (Slurm sets it for --array jobs)}"
"$BIN/hsa-augment" --harness "$HARNESS" -i "$INPUT" -o "$OUT.part-$SLURM_ARRAY_TASK_ID" --n "${HSA_N:-2}" \
  --seed "${SEED:-1}" --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT"
