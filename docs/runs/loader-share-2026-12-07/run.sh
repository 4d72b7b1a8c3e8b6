#!/usr/bin/env bash
# HSA-SFT with the renamed skill loader made common: in make reproduce's HSA records only ~4 % name a
# renamed loader (21 train-pool names); here those records are repeated ×UPSAMPLE (default 10) beside the
# rest, and HSA-SFT runs from the chain's base with the chain's recipe (200 steps, equal compute). Then the
# held-out ranking probe (teacher-distill probe --rank-names) against the chain's own HSA-SFT.
set -euo pipefail
R=${R:-out/r37}
BIN=${BIN:-target/release}
UP=${UPSAMPLE:-10}
OUT=$R/loader-share
mkdir -p "$OUT"
python3 - "$R/data/sft.hsa.jsonl" "$OUT/sft.jsonl" "$UP" <<'PY'
import json, sys
src, dst, up = sys.argv[1], sys.argv[2], int(sys.argv[3])
kept = renamed = 0
with open(src) as f, open(dst, "w") as o:
    for line in f:
        t = json.loads(line)
        loader = t.get("harness", {}).get("names", {}).get("tools", {}).get("load_skill", "load_skill")
        times = up if loader != "load_skill" else 1
        o.write(line * times)
        kept += times
        renamed += times if loader != "load_skill" else 0
print(f"{kept} records, {renamed} name a renamed loader ({renamed / kept:.1%})", file=sys.stderr)
PY
ck() { ls -d "$R/$1"/checkpoint-* | tail -1; }
"$BIN"/teacher-distill train --tokenizer "$R/data/tokenizer" --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup \
  --batch-tokens 8192 --gradient-accumulation-steps 2 --seed 1 --eval-steps 0 --overwrite-output-dir --mtp-loss-weight 0 \
  --records "$OUT/sft.jsonl" --model-init "$(ck base)" --max-steps 200 --save-steps 200 --out "$OUT/model"
"$BIN"/teacher-distill probe --model "hsa=$(ck hsa)" --model "loader-share=$(ck loader-share/model)" \
  --records "heldout=$R/data/teacher.heldout.jsonl" --rank-names --summary "$OUT/rank.heldout.json" 2>&1 \
  | grep -E "ranked first|renamed tool ranked|opening call [0-9]" | tee "$OUT/rank.heldout.txt"
# The same probe on 100 training records (the first-turn HSA records that name a renamed loader):
# the names the models were trained on.
python3 - "$R/data/teacher.first.renamed.jsonl" "$OUT/train-renamed.jsonl" <<'PY'
import json, sys
n = 0
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as o:
    for line in f:
        t = json.loads(line)
        if t.get("harness", {}).get("names", {}).get("tools", {}).get("load_skill", "load_skill") != "load_skill":
            o.write(line)
            n += 1
            if n == 100:
                break
PY
"$BIN"/teacher-distill probe --model "hsa=$(ck hsa)" --model "loader-share=$(ck loader-share/model)" \
  --records "train=$OUT/train-renamed.jsonl" --rank-names --summary "$OUT/rank.train.json" 2>&1 \
  | grep -E "ranked first|renamed tool ranked|opening call [0-9]" | tee "$OUT/rank.train.txt"
