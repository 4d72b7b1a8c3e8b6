#!/bin/bash
# At 279b623 (the keyword was the title or the kind, as the viewer said it).
# The chain to HSA-SFT + polish with the teacher looking named products up with search_products first;
# r37's tokenizer and copy stage (neither depends on the teacher's episodes), everything after re-run.
set -eo pipefail
cd "$(git rev-parse --show-toplevel)"
M="make REPRO=out/s40 BIN=target/release CARGO=true"
$M out/s40/data.done
rm -rf out/s40/data/tokenizer && cp -a out/r37/data/tokenizer out/s40/data/tokenizer
rm -rf out/s40/copy && cp -al out/r37/copy out/s40/copy && touch out/s40/copy.done
echo -e "copy\t232" >> out/s40/times.tsv
$M out/s40/hsa.done
$M out/s40/eval-hsa.done
