#!/usr/bin/env bash
# Augmenting your own harness, ad hoc: copy the sample harness as "a user's harness", edit a tool
# description the way an operator would, check that the edit is still a valid harness, then write
# HSA variant directories of it and validate each. Nothing is installed or registered: a harness is
# just a directory.
#
#   examples/pipelines/own_harness.sh [N_VARIANTS]        (binaries from $BIN, default target/release)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-$PWD/target/release}
BIN=$(cd "$BIN" && pwd)
N=${1:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

MINE=$WORK/my-shop
cp -r harness-samples/taolive "$MINE"
# The operator's edit: a shop-specific instruction in the inventory tool's description.
sed -i 's/"description": "查询商品各 SKU 的实时库存。/"description": "查询本店仓库各 SKU 的实时库存，每 5 分钟同步一次。/' \
  "$MINE/tools/check_inventory.json"
grep -q '每 5 分钟同步一次' "$MINE/tools/check_inventory.json"
echo "edited: $(grep -o '"description": "[^"]*' "$MINE/tools/check_inventory.json" | head -1)"

"$BIN/hat" harness validate "$MINE"
echo "my-shop is valid, content hash $("$BIN/hat" harness hash "$MINE")"

"$BIN/hsa-augment" --harness "$MINE" --out "$WORK/variants" --n "$N" --seed 7
for v in "$WORK"/variants/variant-*; do
  "$BIN/hat" harness validate "$v"
  tools=$("$BIN/hat" harness tools "$v" | grep -o '"name": *"[^"]*"' | head -4 | sed 's/"name": *//' | paste -sd' ')
  echo "$(basename "$v"): valid; first tools: $tools"
done
