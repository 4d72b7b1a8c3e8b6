#!/bin/bash
# At a69131e (the keyword is the product kind; reverted after this run).
# The chain to HSA-SFT + polish with the teacher looking named products up with search_products first, by the kind word;
# r37's tokenizer and copy stage (neither depends on the teacher's episodes), everything after re-run.
set -eo pipefail
cd "$(git rev-parse --show-toplevel)"
M="make REPRO=out/s41 BIN=target/release CARGO=true"
$M out/s41/data.done
rm -rf out/s41/data/tokenizer && cp -a out/r37/data/tokenizer out/s41/data/tokenizer
rm -rf out/s41/copy && cp -al out/r37/copy out/s41/copy && touch out/s41/copy.done
echo -e "copy\t232" >> out/s41/times.tsv
$M out/s41/hsa.done
$M out/s41/eval-hsa.done
