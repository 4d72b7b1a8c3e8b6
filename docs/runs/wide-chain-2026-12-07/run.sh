#!/usr/bin/env bash
# make reproduce's chain (copy -> lookup -> base -> HSA-SFT, same rows, steps, batches, seed) at twice
# the width: tiny-2attn with hidden_size 128 (tiny-2attn-128.json) instead of 64. The rows are the
# thirty-seventh session's out/r37/data, so the only difference from out/r37's HSA-SFT is the shape.
set -euo pipefail
W=${W:-out/w128}
mkdir -p "$W"
ln -sfn ../r37/data "$W/data"
touch "$W/data.done"
make REPRO="$W" CURRICULUM_PRESET=docs/runs/wide-chain-2026-12-07/tiny-2attn-128.json "$W/hsa.done" ${FIXED:+"$W/fixed.done"}
