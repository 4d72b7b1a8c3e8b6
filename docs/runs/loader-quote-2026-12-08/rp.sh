#!/bin/bash
# The third arm: sp.sh on rpolish.hsa.jsonl (the fixed arm's Skills rows given random-syllable loader names in
# half by loaderq.py --any-ticked, plus the first arm's HSA full-episode shard), into hsa.rp.
exec "$(dirname "$0")/sp.sh" hsa rpolish rp
