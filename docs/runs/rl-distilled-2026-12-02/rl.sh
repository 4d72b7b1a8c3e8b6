set -ex
cd "$(dirname "$0")/../../.."
D=out/distill; R=out/rl; S=target/release; H=harness-samples/taolive
FAULTS=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
$S/hat sim tasks --harness $H --n 2000 --split train --viewers-per-room 16 --seed 3 --products 600 -o $R/tasks.jsonl
rm -rf $R/variants
$S/hsa-augment --harness $H --out $R/variants --n 8 --pool train --seed 1
$S/grpo-train --model $D/model/checkpoint-000400 --tasks $R/tasks.jsonl --harness $H \
  $(for d in $R/variants/variant-*; do echo --harness $d; done) --faults $FAULTS --products 600 \
  --max-steps 30 --save-steps 10 --num-generations 4 --tasks-per-step 8 --learning-rate 1e-4 --seed 1 \
  --out $R/model --overwrite-output-dir
