# HAT toolkit — the pipeline on the embedded default, the tests, the benchmarks.
#   make run     set up and run the pipeline as far as it exists today (the main job)
#   make test    the test suite and the examples (what CI runs)
#   make examples  build and run every example and pipeline in examples/ (PROFILE=release for release bins)
#   make bench   benchmarks that print figures (make bench-model: ratios to transformers)
#   make serve   OpenAI-compatible server + agent mode (MODEL=ckpt dir, else tiny RANDOM weights: demo only)
#   make replay  replay-bench against a running server (make serve in another shell)
#   make loadtest  1,000 requests at concurrency 32 + interleaved bad requests against serve (tiny, CPU)
#
# The pipeline, stage by stage (each a Unix tool over JSONL; outputs under $(OUT)/):
#   1. validate the sample harness and write held-out harness variants (eval pool)
#   2. generate viewer tasks (train/dev splits) from the seeded catalog
#   3. teacher rollouts (oracle) under the original harness, with injected tool faults
#   4. HSA: rewrite the teacher trajectories consistently with augmented harness variants
#   5. score everything with the verifiable judge and report by intent and variant
#   6. train the embedded default model's tokenizer on the rendered trajectories + general text
#   (SFT, OPD, RL and serving stages join here as their tools land.)
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
CARGO ?= cargo
HARNESS ?= harness-samples/taolive
OUT ?= out
SEED ?= 1
TRAIN_TASKS ?= 1000
DEV_TASKS ?= 200
FAULTS ?= timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
BIN := target/release
HAT := $(BIN)/hat

.PHONY: run build test examples bench bench-model clean-out distill compare serve replay replay-set loadtest openai-client-test

build:
	$(CARGO) build --release --bins

run: build
	@mkdir -p $(OUT)
	$(HAT) harness validate $(HARNESS)
	$(HAT) harness render $(HARNESS) > $(OUT)/system_prompt.txt
	rm -rf $(OUT)/heldout-variants
	$(BIN)/hsa-augment --harness $(HARNESS) --out $(OUT)/heldout-variants --n 8 --pool eval --seed $(SEED)
	$(HAT) sim tasks --n $(TRAIN_TASKS) --split train --seed $(SEED) -o $(OUT)/tasks.train.jsonl
	$(HAT) sim tasks --n $(DEV_TASKS) --split dev --seed $(SEED) -o $(OUT)/tasks.dev.jsonl
	$(HAT) sim rollout --harness $(HARNESS) --tasks $(OUT)/tasks.train.jsonl --faults $(FAULTS) -o $(OUT)/teacher.jsonl
	$(BIN)/hsa-augment --harness $(HARNESS) -i $(OUT)/teacher.jsonl -o $(OUT)/teacher.hsa.jsonl --n 2 --seed $(SEED) \
		--on-error skip --rejects $(OUT)/teacher.hsa.rejects.jsonl
	$(BIN)/judge score -i $(OUT)/teacher.hsa.jsonl -o $(OUT)/teacher.hsa.scored.jsonl
	$(BIN)/judge report -i $(OUT)/teacher.hsa.scored.jsonl > $(OUT)/teacher.report.md
	$(HAT) tokenizer train --records $(OUT)/teacher.hsa.jsonl --harness $(HARNESS) \
		--text testdata/ifeval/input_data.jsonl --vocab-size 4096 --out $(OUT)/tokenizer
	@echo "pipeline outputs in $(OUT)/: system_prompt.txt heldout-variants/ teacher*.jsonl teacher.report.md tokenizer/"
	$(MAKE) distill

# HSA-SFT of the embedded default (tiny preset, CPU): collect filtered oracle trajectories under the original
# harness and train-pool variants, train the tokenizer on them, train for at most DISTILL_MINUTES, then play
# held-out dev tasks with the model (LocalPolicy) under the original harness and score them with the judge.
DISTILL := $(OUT)/distill
DISTILL_TASKS ?= 4800
DISTILL_VARIANTS ?= 4
DISTILL_MINUTES ?= 15
DISTILL_STEPS ?= 1000
DISTILL_EVAL_TASKS ?= 40
# Viewers asking in one live-room state: their records share the system prompt and tools, which training
# computes once per micro-batch.
DISTILL_VIEWERS_PER_ROOM ?= 16
TD := $(BIN)/teacher-distill
# One training recipe for the embedded default and both arms of `make compare`.
TRAIN_ARGS = --dev-records $(DISTILL)/teacher.dev.jsonl --model-init tiny --tokenizer $(DISTILL)/tokenizer \
	--max-steps $(DISTILL_STEPS) --learning-rate $(DISTILL_LR) --batch-tokens $(DISTILL_BATCH_TOKENS) \
	--gradient-accumulation-steps $(DISTILL_ACCUM) --eval-steps 100 --save-steps 100 --seed $(SEED)
DISTILL_LR ?= 3e-3
# A micro-batch holds ~3 records of one room (their ~2.4k-token system prompt and tools once, then ~0.4k tokens
# each); two micro-batches per step train on both cores at once. Larger micro-batches see more records but take
# fewer steps in the budget and measured worse (15 min: 8,192 → 92 steps, dev loss 1.29; 4,096 → 230 steps, 0.89).
# Since CPU training has its own autodiff ops (~1 step/s on 2 cores), 15 minutes reach ~950 of the 1,000 steps:
# about one pass over the 4,800 tasks' records (dev loss 0.59).
DISTILL_BATCH_TOKENS ?= 4096
DISTILL_ACCUM ?= 2
distill: build
	@mkdir -p $(DISTILL)
	$(HAT) sim tasks --n $(DISTILL_TASKS) --split train --viewers-per-room $(DISTILL_VIEWERS_PER_ROOM) --seed $(SEED) \
		-o $(DISTILL)/tasks.train.jsonl
	$(HAT) sim tasks --n $(DISTILL_EVAL_TASKS) --split dev --seed $(SEED) -o $(DISTILL)/tasks.dev.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.train.jsonl --variants $(DISTILL_VARIANTS) \
		--original-share 0.5 --faults $(FAULTS) --seed $(SEED) -o $(DISTILL)/teacher.jsonl --summary $(DISTILL)/collect.json
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.dev.jsonl --variants 0 --seed $(SEED) -o $(DISTILL)/teacher.dev.jsonl
	$(HAT) tokenizer train --records $(DISTILL)/teacher.jsonl --harness $(HARNESS) \
		--text testdata/ifeval/input_data.jsonl --vocab-size 4096 --out $(DISTILL)/tokenizer
	$(TD) train --records $(DISTILL)/teacher.jsonl $(TRAIN_ARGS) --out $(DISTILL)/model --overwrite-output-dir \
		--max-train-minutes $(DISTILL_MINUTES) --rejects $(DISTILL)/train.rejects.jsonl
	$(TD) eval --model tiny=$$(ls -d $(DISTILL)/model/checkpoint-* | tail -1) --set original=$(HARNESS) \
		--tasks $(DISTILL)/tasks.dev.jsonl --n $(DISTILL_EVAL_TASKS) --seed $(SEED) \
		--episodes $(DISTILL)/eval.jsonl --summary $(DISTILL)/eval.json | tee $(DISTILL)/eval.md

# The paper's core claim at toy scale: with equal compute (same recipe, steps and batch; no time cap),
# (a) fixed-harness SFT on the original harness only against (b) HSA-SFT on train-pool variants (the
# distill stage's data), both evaluated on the original harness and on held-out eval-pool variants
# (renames and rewrites never seen in training). Writes $(COMPARE)/table.md.
COMPARE := $(OUT)/compare
COMPARE_HELDOUT ?= 4
compare: build
	@test -f $(DISTILL)/teacher.jsonl || $(MAKE) distill
	rm -rf $(COMPARE)/fixed $(COMPARE)/hsa $(COMPARE)/heldout
	@mkdir -p $(COMPARE)
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.train.jsonl --variants 0 --faults $(FAULTS) \
		--seed $(SEED) -o $(COMPARE)/teacher.fixed.jsonl --summary $(COMPARE)/collect.fixed.json
	$(TD) train --records $(COMPARE)/teacher.fixed.jsonl $(TRAIN_ARGS) --out $(COMPARE)/fixed
	$(TD) train --records $(DISTILL)/teacher.jsonl $(TRAIN_ARGS) --out $(COMPARE)/hsa
	$(BIN)/hsa-augment --harness $(HARNESS) --out $(COMPARE)/heldout --n $(COMPARE_HELDOUT) --pool eval --seed $(SEED)
	$(TD) eval --model fixed=$$(ls -d $(COMPARE)/fixed/checkpoint-* | tail -1) \
		--model hsa=$$(ls -d $(COMPARE)/hsa/checkpoint-* | tail -1) \
		--set original=$(HARNESS) --set heldout=$$(ls -d $(COMPARE)/heldout/variant-* | paste -sd, -) \
		--tasks $(DISTILL)/tasks.dev.jsonl --n $(DISTILL_EVAL_TASKS) --seed $(SEED) \
		--episodes $(COMPARE)/eval.jsonl --summary $(COMPARE)/eval.json | tee $(COMPARE)/table.md

# `cargo test` has already built the debug binaries and examples, so the examples run on those
# (PROFILE=debug) instead of paying for a second, release build in CI.
test:
	$(CARGO) test
	$(MAKE) examples

# Every example and pipeline of examples/ on the sample harness: exit 0 and non-empty output each.
PROFILE ?= debug
examples:
	PROFILE=$(PROFILE) CARGO=$(CARGO) examples/run_all.sh

bench:
	$(CARGO) bench --benches

# Model and training throughput against transformers/PyTorch on the same weights (needs python3 with
# torch and transformers): our bench writes the checkpoints, the scripts measure the reference, our bench
# prints the ratios.
bench-model:
	$(CARGO) bench --bench model
	python3 scripts/bench_transformers.py
	$(CARGO) bench --bench model

clean-out:
	rm -rf $(OUT)

# --- serving (issue 8) ---
PORT ?= 8000
MODEL ?=
# A tokenizer for random-weight demos when `make run` has not trained one yet.
$(OUT)/tokenizer/tokenizer.json:
	$(CARGO) build --release --bin hat
	$(HAT) tokenizer train --harness $(HARNESS) --text testdata/ifeval/input_data.jsonl --vocab-size 4096 --out $(OUT)/tokenizer

# Serve MODEL (a Hugging Face checkpoint dir) or, without it, the tiny preset with random weights.
serve: $(OUT)/tokenizer/tokenizer.json
	$(CARGO) build --release --bin serve
	$(BIN)/serve $(if $(MODEL),--model $(MODEL),--preset tiny --tokenizer $(OUT)/tokenizer) --harness $(HARNESS) --port $(PORT)

# Replay the committed deployment set against http://127.0.0.1:$(PORT); results in $(OUT)/replay/.
replay:
	$(CARGO) build --release --bin replay-bench
	$(BIN)/replay-bench run --base-url http://127.0.0.1:$(PORT) --concurrency 8 --warmup 2 --max-tokens 64 --out $(OUT)/replay

# Regenerate testdata/replay/default.jsonl (110 requests, the paper's intent mix, seed 1).
replay-set:
	$(CARGO) build --release --bin replay-bench
	$(BIN)/replay-bench make-set --harness harness-samples/taolive --catalog testdata/catalog.json --n 110 --seed 1 -o testdata/replay/default.jsonl

# Load test: 1,000 replay requests at concurrency 32 with malformed/oversized/unauthenticated ones interleaved.
loadtest: $(OUT)/tokenizer/tokenizer.json
	$(CARGO) build --release --bin serve --bin replay-bench
	benches/serve_loadtest.sh $(OUT)/tokenizer $(OUT)/loadtest

# The official openai Python client against a live server (CI runs this after `make test`).
openai-client-test:
	$(CARGO) build --bin serve --bin hat
	tests/openai_client/run.sh
