#!/usr/bin/env bash
# The data path of `make run` as one Unix pipe, nothing written to disk in between: viewer tasks →
# oracle teacher rollouts under the sample harness (with injected tool faults) → HSA copies under
# harness variants → verifiable judge scores → a markdown report by intent and variant.
#
#   examples/pipelines/augment_stream.sh [N_TASKS]        (binaries from $BIN, default target/release)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release}
H=harness-samples/taolive
N=${1:-40}

"$BIN/hat" sim tasks --n "$N" --split dev --seed 1 \
  | "$BIN/hat" sim rollout --harness "$H" --faults timeout=0.05,malformed=0.05 --seed 1 \
  | "$BIN/hsa-augment" --harness "$H" --n 2 --variants 8 --seed 1 \
  | "$BIN/judge" score \
  | "$BIN/judge" report
