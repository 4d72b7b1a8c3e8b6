#!/bin/bash
# The sixth make reproduce run: evidence quotes (plan, then quote) on by default. Release binaries at c8bef19.
# out/r42's data stage was made by `make out/r42/data.done REPRO=out/r42` at c8bef19; its copy stage is
# out/r41's (the same unquoted one-id rows, byte for byte: make reproduce's copy stage at 1f8edc1), and its
# lookup, base and HSA-SFT (+ polish) stages are out/pq41's, made by docs/runs/plan-quote-2026-12-07/run.sh
# on rows identical to out/r42/data's but for wall-clock latencies in their meta (checked record by record).
# The rest — fixed-harness SFT + polish, OPD, RL, the five evaluations, the oracle, the replay, the report —
# is make reproduce itself, two stages at a time, on 2 cores shared with a second training chain.
set -eo pipefail
cd "$(git rev-parse --show-toplevel)"
make out/r42/data.done REPRO=out/r42 BIN=target/release CARGO=true
cp -al out/r41/copy out/r42/copy
for s in lookup base hsa; do cp -al out/pq41/$s out/r42/$s; done
for s in copy lookup base hsa; do touch out/r42/$s.done; done
make -j2 reproduce REPRO=out/r42 BIN=target/release CARGO=true
# (The first RL attempt was stopped to free the cores; the same command, run again, re-ran RL from its start.)
