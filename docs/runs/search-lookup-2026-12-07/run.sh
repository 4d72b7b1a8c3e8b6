#!/bin/bash
# The chain from data to the polished HSA-SFT model and its evaluation, with the teacher searching for a
# named product first: run at 279b623 as `run.sh out/s40` (keyword = the viewer's words; stopped after
# the base stage) and at a69131e as `run.sh out/s41` (keyword = the product's kind). Both reuse out/r37's
# tokenizer and copy stage (neither depends on the teacher's episodes); everything after is re-run.
set -eo pipefail
cd "$(git rev-parse --show-toplevel)"
R=${1:?usage: run.sh OUT_DIR}
M="make REPRO=$R BIN=target/release CARGO=true"
$M $R/data.done
rm -rf $R/data/tokenizer && cp -a out/r37/data/tokenizer $R/data/tokenizer
rm -rf $R/copy && cp -al out/r37/copy $R/copy && touch $R/copy.done
echo -e "copy\t232" >> $R/times.tsv
$M $R/hsa.done
$M $R/eval-hsa.done
