# HAT toolkit — the pipeline on the embedded default, the tests, the benchmarks.
#   make run     set up and run the pipeline as far as it exists today (the main job)
#   make reproduce  the paper's table at toy scale, every stage (out/reproduce/report.md); make demo: tiny budgets
#   make opd     base -> fixed-harness SFT -> OPD from it, on make reproduce's stages (out/reproduce/opd.md)
#   make curriculum  the copy curriculum on tiny-2attn: the model that copies ids and reads tool results
#   make test    the test suite and the examples (what CI runs)
#   make examples  build and run every example and pipeline in examples/ (PROFILE=release for release bins)
#   make bench   benchmarks that print figures (make bench-model: ratios to transformers;
#                make bench-llamacpp: side by side with llama.cpp on the same GGUF-converted weights)
#   make serve   OpenAI-compatible server + agent mode (MODEL=ckpt dir, else tiny RANDOM weights: demo only)
#   make replay  replay-bench against a running server (make serve in another shell)
#   make loadtest  1,000 requests at concurrency 32 + interleaved bad requests against serve (tiny, CPU)
#   make gpu-prepare  build the CUDA binaries and data of the device run (issue 29, docs/gpu/); then
#                `bash scripts/gpu_check.sh` on a GPU machine with gpu-run/ beside it
#   make fuzz    every libFuzzer target for FUZZ_SECONDS (default 120) each: executions, coverage, findings
#                (docs/fuzzing.md; `make test` replays the committed corpus on stable)
#
# The pipeline, stage by stage (each a Unix tool over JSONL; outputs under $(OUT)/):
#   1. validate the sample harness and write held-out harness variants (eval pool)
#   2. generate viewer tasks (train/dev splits) from the seeded catalog: only tasks $(HARNESS) serves, in
#      the mix its [serves] table declares (docs/own-harness.md: bring your own harness)
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

.PHONY: reproduce demo run build test examples bench bench-model bench-llamacpp clean-out gpu-prepare distill distill-data distill-base distill-eval curriculum curriculum-data compare rl opd serve replay replay-set loadtest openai-client-test adapters-test services-loadtest fuzz

# BIN=target/debug runs the pipeline on debug binaries, built without --release (quick checks at small sizes).
build:
	$(CARGO) build $(if $(filter target/release,$(BIN)),--release) --bins

run: build
	@mkdir -p $(OUT)
	$(HAT) harness validate $(HARNESS)
	$(HAT) harness render $(HARNESS) > $(OUT)/system_prompt.txt
	$(HAT) sim tasks --harness $(HARNESS) --n $(TRAIN_TASKS) --split train --seed $(SEED) -o $(OUT)/tasks.train.jsonl
	$(HAT) sim tasks --harness $(HARNESS) --n $(DEV_TASKS) --split dev --seed $(SEED) -o $(OUT)/tasks.dev.jsonl
	rm -rf $(OUT)/heldout-variants
	$(BIN)/hsa-augment --harness $(HARNESS) --out $(OUT)/heldout-variants --n 8 --pool eval --seed $(SEED) \
		--keep-skills-of $(OUT)/tasks.dev.jsonl
	$(HAT) sim rollout --harness $(HARNESS) --tasks $(OUT)/tasks.train.jsonl --faults $(FAULTS) -o $(OUT)/teacher.jsonl
	$(BIN)/hsa-augment --harness $(HARNESS) -i $(OUT)/teacher.jsonl -o $(OUT)/teacher.hsa.jsonl --n 2 --seed $(SEED) \
		--on-error skip --rejects $(OUT)/teacher.hsa.rejects.jsonl
	$(BIN)/judge score -i $(OUT)/teacher.hsa.jsonl -o $(OUT)/teacher.hsa.scored.jsonl
	$(BIN)/judge report -i $(OUT)/teacher.hsa.scored.jsonl > $(OUT)/teacher.report.md
	$(HAT) tokenizer train --records $(OUT)/teacher.hsa.jsonl --harness $(HARNESS) \
		--text testdata/ifeval/input_data.jsonl --vocab-size 4096 --out $(OUT)/tokenizer
	@echo "pipeline outputs in $(OUT)/: system_prompt.txt heldout-variants/ teacher*.jsonl teacher.report.md tokenizer/"
	$(MAKE) distill

# HSA-SFT of the embedded default (tiny preset, CPU), as stages over files in $(DISTILL)/:
#  data   a 600-product catalog; training tasks as full episodes (16 viewers per room) and as opening turns
#         (64 viewers per room: which skill, which tool, at a sixth of a record's tokens once the room's
#         system prompt is paid for), played by the oracle under the original harness and DISTILL_VARIANTS
#         train-pool HSA variants and filtered by the judge. Held-out sets, DISTILL_EVAL_TASKS each:
#           primary    products, rooms, orders and FAQ entries never trained on, worded with the training
#                      templates (`--phrasings train`), under the original harness
#           heldout    the same tasks under 8 eval-pool variants: names and wording training never saw
#           phrasings  held-out wording too (the second column; scripts/surface_ceiling.py says how far
#                      keyword statistics get there)
#  base   the opening turns of the original-harness dialogues without the system prompt (the viewers'
#         messages and the opening call), loss on the call, 1e-3 held constant: the model learns to choose
#         the skill from the message before SFT adds the harness (DISTILL_BASE_STEPS=0: skip). The choice
#         appears between steps 250 and 500 and only at an undecayed rate (docs/learning-default.md).
#  sft    HSA-SFT from the base on full episodes + opening turns (+ the base stage's prompt-less opening turns,
#         so the choice is kept), 1e-3 held, a fixed step budget (same result on any
#         machine), teacher-forced dev metrics on the primary set every 100 steps (metrics.jsonl, loss.svg)
#  eval   the probe (teacher-forced opening call by intent, with intervals) on the three sets, then the model
#         plays the primary tasks in the simulator and the judge scores them (eval.md)
DISTILL := $(OUT)/distill
DISTILL_PRODUCTS ?= 600
DISTILL_TASKS ?= 4800
DISTILL_FIRST_TASKS ?= 19200
DISTILL_VARIANTS ?= 64
# Share of hook-triggered retries kept in full, feedback and masked rejected attempt included (the rest
# are cut to the final attempt): ~6% of kept teacher records then carry a fired hook's feedback.
DISTILL_KEEP_RETRY ?= 0.6
# The HSA config of the training variants (default: the built-in ops, configs/hsa.toml);
# configs/hsa-coined.toml coins half the renamed names (docs/learning-default.md, seventeenth session).
HSA_CONFIG ?=
HSA_CONFIG_ARG = $(if $(HSA_CONFIG),--hsa-config $(HSA_CONFIG))
DISTILL_EVAL_TASKS ?= 200
DISTILL_ROLLOUTS ?= 200
DISTILL_BASE_STEPS ?= 750
DISTILL_BASE_LR ?= 1e-3
# Opening turns are ~75 tokens: ~13 to a 2,048-token micro-batch, one micro-batch a step.
DISTILL_BASE_BATCH_TOKENS ?= 2048
DISTILL_STEPS ?= 400
DISTILL_LR ?= 1e-3
# Held, not decayed: the opening choice is learned late and only at full rate (docs/learning-default.md).
DISTILL_LR_SCHEDULER ?= constant_with_warmup
# A micro-batch of 8,192 tokens holds one room under one harness: its ~2.5k-token system prompt and tools
# once, then the viewers' episodes (~340 tokens each) or opening turns (~100 each).
DISTILL_BATCH_TOKENS ?= 8192
DISTILL_ACCUM ?= 2
# The weight of the MTP head's loss in the SFT stages (teacher-distill train --mtp-loss-weight), so the
# model they train can draft for `serve --mtp`. Off: at 0.3 the token loss of the HSA stage ends ~1 %
# higher (docs/serving-performance.md, "MTP at concurrency 1"), and make reproduce's figures are without it.
SFT_MTP_LOSS_WEIGHT ?= 0
TD := $(BIN)/teacher-distill
CATALOG := --products $(DISTILL_PRODUCTS)
# One recipe for the embedded default, both arms of `make compare` and `make curriculum` (RECORDS and
# SFT_INIT vary).
SFT_INIT = $(if $(filter 0,$(DISTILL_BASE_STEPS)),tiny,$(DISTILL)/base/checkpoint-$(shell printf %06d $(DISTILL_BASE_STEPS)))
# PROBE_RECORDS: the directory of the teacher-forced probe sets (teacher.{primary,heldout,phrasings}.jsonl)
# that the SFT's dev metrics and distill-eval read; the curriculum writes its own, with evidence quotes.
PROBE_RECORDS = $(DISTILL)
SFT_ARGS = --dev-records $(PROBE_RECORDS)/teacher.primary.jsonl --tokenizer $(DISTILL)/tokenizer \
	--max-steps $(DISTILL_STEPS) --learning-rate $(DISTILL_LR) --lr-scheduler-type $(DISTILL_LR_SCHEDULER) --batch-tokens $(DISTILL_BATCH_TOKENS) \
	--gradient-accumulation-steps $(DISTILL_ACCUM) --eval-steps 100 --save-steps 100 --seed $(SEED) \
	--mtp-loss-weight $(SFT_MTP_LOSS_WEIGHT) --model-init $(SFT_INIT)
newest = $$(ls -d $(1)/checkpoint-* | tail -1)

distill: build distill-data distill-base
	$(TD) train --records $(DISTILL)/teacher.jsonl $(SFT_ARGS) --out $(DISTILL)/model --overwrite-output-dir \
		--rejects $(DISTILL)/train.rejects.jsonl
	$(MAKE) distill-eval MODEL_DIR=$(call newest,$(DISTILL)/model)

distill-data: build
	@mkdir -p $(DISTILL)
	$(HAT) sim tasks --harness $(HARNESS) --n $(DISTILL_TASKS) --split train --viewers-per-room 16 --seed $(SEED) $(CATALOG) -o $(DISTILL)/tasks.train.jsonl
	$(HAT) sim tasks --harness $(HARNESS) --n $(DISTILL_FIRST_TASKS) --split train --viewers-per-room 64 --seed $$(($(SEED) + 1)) $(CATALOG) \
		-o $(DISTILL)/tasks.first.jsonl
	$(HAT) sim tasks --harness $(HARNESS) --n $(DISTILL_EVAL_TASKS) --split dev --phrasings train --seed $(SEED) $(CATALOG) -o $(DISTILL)/tasks.primary.jsonl
	$(HAT) sim tasks --harness $(HARNESS) --n $(DISTILL_EVAL_TASKS) --split dev --seed $(SEED) $(CATALOG) -o $(DISTILL)/tasks.phrasings.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.train.jsonl --variants $(DISTILL_VARIANTS) --original-share 0.5 \
		--keep-retry-prob $(DISTILL_KEEP_RETRY) $(HSA_CONFIG_ARG) \
		--faults $(FAULTS) --seed $(SEED) $(CATALOG) -o $(DISTILL)/teacher.full.jsonl --summary $(DISTILL)/collect.json
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.first.jsonl --variants $(DISTILL_VARIANTS) --original-share 0.5 \
		--keep-retry-prob $(DISTILL_KEEP_RETRY) $(HSA_CONFIG_ARG) \
		--faults $(FAULTS) --seed $(SEED) $(CATALOG) -o $(DISTILL)/teacher.first.full.jsonl --summary $(DISTILL)/collect.first.json
	$(HAT) records cat --first-turn -i $(DISTILL)/teacher.first.full.jsonl -o $(DISTILL)/teacher.first.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.first.jsonl --variants 0 --seed $(SEED) $(CATALOG) \
		-o $(DISTILL)/teacher.original.jsonl
	$(HAT) records cat --first-turn --dialogue-only -i $(DISTILL)/teacher.original.jsonl -o $(DISTILL)/base.jsonl
	# The prompt-less opening turns stay in SFT so the choice learned in the base stage is kept while the
	# harness is added (docs/learning-default.md).
	cat $(DISTILL)/teacher.full.jsonl $(DISTILL)/teacher.first.jsonl $(DISTILL)/base.jsonl > $(DISTILL)/teacher.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.primary.jsonl --variants 0 --seed $(SEED) $(CATALOG) \
		-o $(DISTILL)/teacher.primary.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.primary.jsonl --variants 8 --pool eval --original-share 0 \
		--seed $(SEED) $(CATALOG) --variants-dir $(DISTILL)/heldout -o $(DISTILL)/teacher.heldout.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.phrasings.jsonl --variants 0 --seed $(SEED) $(CATALOG) \
		-o $(DISTILL)/teacher.phrasings.jsonl
	$(HAT) tokenizer train --records $(DISTILL)/teacher.jsonl --harness $(HARNESS) \
		--text testdata/ifeval/input_data.jsonl --vocab-size 4096 --out $(DISTILL)/tokenizer

# The base stage's recipe, from `tiny`; add --records, --tokenizer, --max-steps, --save-steps, --out.
BASE_TRAIN = $(TD) train --model-init tiny --learning-rate $(DISTILL_BASE_LR) --lr-scheduler-type constant_with_warmup \
	--warmup-steps 20 --batch-tokens $(DISTILL_BASE_BATCH_TOKENS) --seed $(SEED) --eval-steps 0 --overwrite-output-dir

distill-base: distill-data
ifneq ($(DISTILL_BASE_STEPS),0)
	$(BASE_TRAIN) --records $(DISTILL)/base.jsonl --tokenizer $(DISTILL)/tokenizer \
		--max-steps $(DISTILL_BASE_STEPS) --save-steps $(DISTILL_BASE_STEPS) --out $(DISTILL)/base
endif

# MODEL_DIR: the checkpoint to evaluate (default: the newest of $(DISTILL)/model); EVAL_DIR: where the
# probe and the rollouts go; EVAL_NAME: the model's label in the tables.
EVAL_DIR ?= $(DISTILL)
EVAL_NAME ?= tiny
distill-eval:
	$(TD) probe --model $(EVAL_NAME)=$(or $(MODEL_DIR),$(call newest,$(DISTILL)/model)) \
		--records primary=$(PROBE_RECORDS)/teacher.primary.jsonl --records heldout=$(PROBE_RECORDS)/teacher.heldout.jsonl \
		--records phrasings=$(PROBE_RECORDS)/teacher.phrasings.jsonl --summary $(EVAL_DIR)/probe.json | tee $(EVAL_DIR)/probe.md
	$(TD) eval --model $(EVAL_NAME)=$(or $(MODEL_DIR),$(call newest,$(DISTILL)/model)) --set original=$(HARNESS) \
		--tasks $(DISTILL)/tasks.primary.jsonl --n $(DISTILL_ROLLOUTS) --seed $(SEED) $(CATALOG) \
		--episodes $(EVAL_DIR)/eval.jsonl --summary $(EVAL_DIR)/eval.json | tee $(EVAL_DIR)/eval.md

# The copy curriculum (docs/learning-default.md, twelfth and thirteenth sessions): the recipe whose model
# copies product ids from its prompt and states what the tools returned — effectiveness 0.385 on the 200
# primary tasks against 0.220 for `make distill`'s recipe on the same data (better in 38 tasks, worse in 3,
# seed 1) — at ~1.5× its training time; not yet the default. Stages
# over files in $(CURRICULUM)/, each from the last:
#  data    copy rows (`hat sim copy-task`: an id, or a queue named by link number or title, to copy into a
#          call), and the original-harness episodes with the room state as their only prompt, as opening
#          turns and whole (the calls, the tool results and the reply); product ids renamed per record,
#          so only copying lowers the loss on them
#  copy    $(CURRICULUM_PRESET) from scratch on one-id copy rows, past the copy plateau (~250 steps)
#  lookup  copy rows of every kind + the opening turns: the viewer's product found in the room state
#  reply   + the whole episodes: the final reply reads the tool results
#  sft     `make distill`'s HSA-SFT recipe on its records (ids renamed) + the reply stage's rows
#  eval    as distill-eval, into $(CURRICULUM)/
CURRICULUM := $(OUT)/curriculum
CURRICULUM_PRESET ?= tiny-2attn
COPY_STEPS ?= 300
LOOKUP_STEPS ?= 800
REPLY_STEPS ?= 600
# Copy rows of the copy stage (one id, the current product) and of the lookup stage (every kind).
COPY_ROWS ?= 20000
LOOKUP_COPY_ROWS ?= 30000
# add --tokenizer, --model-init, --records, --max-steps, --save-steps, --out (STAGE_FLAGS: all but the schedule)
STAGE_FLAGS = --learning-rate 1e-3 --warmup-steps 20 --seed $(SEED) --eval-steps 0 --overwrite-output-dir --batch-tokens 4096
STAGE_TRAIN = $(TD) train $(STAGE_FLAGS) --lr-scheduler-type constant_with_warmup
# The prompt sections a room-state row keeps (by their heading or first line): taolive's room and product on
# screen, aftersales's order block.
STATE_SECTIONS ?= Room state|Current product|Order in this conversation
ROOM_ONLY := --dialogue-only --keep-sections '$(STATE_SECTIONS)'
# QUOTE_EVIDENCE=1: every row's lookup call after the copy stage is preceded by reasoning that names the
# message's calls (the plan), then quotes the room-state entry from the viewer's words to the id (`hat records
# cat --quote-evidence`, src/evidence.rs), in training and probe rows; the copy stage's one-id rows stay
# unquoted, so it crosses its plateau as before (quoted, it did not in 300 steps). On taolive, from the same
# copy stage: tasks solved 0.320 → 0.410 on the 200 primary tasks (21 / 3, p = 0.0003), free-running product
# id right 28 → 51 of 123 (learning-default.md, forty-first session). On by default for taolive only:
# other harnesses are not measured with it. (A plan naming what the reply states, `--plan-reply` at 3a21224,
# changed nothing measurable under the mixed polish below and was reverted: forty-second session.)
QUOTE_EVIDENCE ?= $(if $(filter %taolive %taolive/,$(HARNESS)),1,0)
EVIDENCE := $(if $(filter 1,$(QUOTE_EVIDENCE)),--quote-evidence)
checkpoint = $(1)/checkpoint-$(shell printf %06d $(2))

# The curriculum's rows from $(DISTILL)'s teacher data, into $(CURRICULUM)/ (make reproduce builds them in its
# data directory: CURRICULUM=DISTILL=out/reproduce/data).
curriculum-data:
	@mkdir -p $(CURRICULUM)
	$(HAT) sim copy-task --n $(COPY_ROWS) --kinds current --seed $(SEED) $(CATALOG) | $(HAT) records cat -o $(CURRICULUM)/copy.current.jsonl
	$(HAT) sim copy-task --n $(LOOKUP_COPY_ROWS) --seed $$(($(SEED) + 1)) $(CATALOG) | $(HAT) records cat $(EVIDENCE) -o $(CURRICULUM)/copy.jsonl
	$(HAT) records cat $(EVIDENCE) --first-turn $(ROOM_ONLY) --rename-ids $(SEED) -i $(DISTILL)/teacher.original.jsonl -o $(CURRICULUM)/room.jsonl
	$(HAT) records cat $(EVIDENCE) $(ROOM_ONLY) --rename-ids $$(($(SEED) + 1)) -i $(DISTILL)/teacher.original.jsonl -o $(CURRICULUM)/dialog.jsonl
	for f in teacher.full teacher.first; do \
		$(HAT) records cat $(EVIDENCE) --rename-ids $(SEED) -i $(DISTILL)/$$f.jsonl -o $(CURRICULUM)/$$f.renamed.jsonl; done
	cat $(CURRICULUM)/copy.jsonl $(CURRICULUM)/room.jsonl > $(CURRICULUM)/lookup.jsonl
	cat $(CURRICULUM)/lookup.jsonl $(CURRICULUM)/dialog.jsonl > $(CURRICULUM)/reply.jsonl

curriculum: SFT_INIT = $(call checkpoint,$(CURRICULUM)/reply,$(REPLY_STEPS))
curriculum: PROBE_RECORDS = $(CURRICULUM)
curriculum: build distill-data
	$(MAKE) curriculum-data
	for s in primary heldout phrasings; do \
		$(HAT) records cat $(EVIDENCE) -i $(DISTILL)/teacher.$$s.jsonl -o $(CURRICULUM)/teacher.$$s.jsonl; done
	cat $(CURRICULUM)/teacher.full.renamed.jsonl $(CURRICULUM)/teacher.first.renamed.jsonl $(CURRICULUM)/reply.jsonl \
		> $(CURRICULUM)/sft.jsonl
	$(STAGE_TRAIN) --tokenizer $(DISTILL)/tokenizer --model-init $(CURRICULUM_PRESET) --records $(CURRICULUM)/copy.current.jsonl \
		--max-steps $(COPY_STEPS) --save-steps $(COPY_STEPS) --out $(CURRICULUM)/copy
	$(STAGE_TRAIN) --tokenizer $(DISTILL)/tokenizer --model-init $(call checkpoint,$(CURRICULUM)/copy,$(COPY_STEPS)) --records $(CURRICULUM)/lookup.jsonl \
		--max-steps $(LOOKUP_STEPS) --save-steps $(LOOKUP_STEPS) --out $(CURRICULUM)/lookup
	$(STAGE_TRAIN) --tokenizer $(DISTILL)/tokenizer --model-init $(call checkpoint,$(CURRICULUM)/lookup,$(LOOKUP_STEPS)) --records $(CURRICULUM)/reply.jsonl \
		--max-steps $(REPLY_STEPS) --save-steps $(REPLY_STEPS) --out $(CURRICULUM)/reply
	$(TD) train --records $(CURRICULUM)/sft.jsonl $(SFT_ARGS) --out $(CURRICULUM)/model --overwrite-output-dir
	$(MAKE) distill-eval MODEL_DIR=$(call newest,$(CURRICULUM)/model) EVAL_DIR=$(CURRICULUM) \
		EVAL_NAME=$(CURRICULUM_PRESET) PROBE_RECORDS=$(CURRICULUM)

# The paper's core claim at toy scale: with equal compute (the same recipe, steps, batch and seed),
# (a) fixed-harness SFT on episodes played under the original harness only against (b) HSA-SFT (the distill
# stage's data and model: `make run` trains it, and `make compare` reuses it when its last checkpoint is
# there), both from the same base. Probed teacher-forced on the primary, held-out-variant and held-out-phrasing
# sets ($(COMPARE)/table.md); on the held-out-variant records, the listed tool names ranked where the opening
# call writes its name — is a renamed tool first, paired ($(COMPARE)/names.md, per record in names.json: the
# claim's mechanism, measured); then both play the 200 primary tasks under the original harness and under the
# 8 held-out variants, faults on, with the paired sign test of (b) against (a): $(COMPARE)/eval.md,
# eval.json, scores.svg (bars with 95% intervals).
COMPARE := $(OUT)/compare
HSA_MODEL = $(DISTILL)/model/checkpoint-$(shell printf %06d $(DISTILL_STEPS))
compare: build distill-data distill-base
	@mkdir -p $(COMPARE)
	$(TD) collect --harness $(HARNESS) --tasks $(DISTILL)/tasks.train.jsonl --variants 0 --faults $(FAULTS) \
		--keep-retry-prob $(DISTILL_KEEP_RETRY) --seed $(SEED) $(CATALOG) -o $(COMPARE)/teacher.fixed.full.jsonl
	$(HAT) records cat --first-turn -i $(DISTILL)/teacher.original.jsonl -o $(COMPARE)/teacher.fixed.first.jsonl
	cat $(COMPARE)/teacher.fixed.full.jsonl $(COMPARE)/teacher.fixed.first.jsonl $(DISTILL)/base.jsonl > $(COMPARE)/teacher.fixed.jsonl
	$(TD) train --records $(COMPARE)/teacher.fixed.jsonl $(SFT_ARGS) --out $(COMPARE)/fixed --overwrite-output-dir
	test -d $(HSA_MODEL) || $(TD) train --records $(DISTILL)/teacher.jsonl $(SFT_ARGS) --out $(DISTILL)/model --overwrite-output-dir
	$(TD) probe --model fixed=$(call newest,$(COMPARE)/fixed) --model hsa=$(HSA_MODEL) \
		--records primary=$(DISTILL)/teacher.primary.jsonl --records heldout=$(DISTILL)/teacher.heldout.jsonl \
		--records phrasings=$(DISTILL)/teacher.phrasings.jsonl --summary $(COMPARE)/probe.json | tee $(COMPARE)/table.md
	$(TD) probe --model fixed=$(call newest,$(COMPARE)/fixed) --model hsa=$(HSA_MODEL) --rank-names \
		--records heldout=$(DISTILL)/teacher.heldout.jsonl --summary $(COMPARE)/names.json 2>&1 | tee $(COMPARE)/names.md
	$(TD) eval --model fixed=$(call newest,$(COMPARE)/fixed) --model hsa=$(HSA_MODEL) --set original=$(HARNESS) \
		--set heldout=$$(ls -d $(DISTILL)/heldout/variant-* | paste -sd,) --tasks $(DISTILL)/tasks.primary.jsonl \
		--n $(DISTILL_ROLLOUTS) --faults $(FAULTS) --seed $(SEED) $(CATALOG) --episodes $(COMPARE)/eval.jsonl \
		--summary $(COMPARE)/eval.json --plot $(COMPARE)/scores.svg | tee $(COMPARE)/eval.md

# HSA-RL of the distilled default (`grpo-train`): groups of RL_GENERATIONS episodes per task, played by the
# policy itself under the original harness or one of 8 train-pool HSA variants (drawn per task) with tool
# faults on, rewarded by the verifiable judge (tool turns and reply turns as separate groups), token-level
# GRPO with DAPO's loss. Then the SFT model and the RL model play the same held-out primary tasks under the
# original harness and under the held-out (eval-pool) variants, faults on, with the paired test.
# RL_INIT: the policy to start from (default: the copy curriculum's model when `make curriculum` has run,
# else the newest HSA-SFT checkpoint of `make distill`). The defaults are docs/grpo.md's third run (G = 8,
# lr 3e-4, 30 steps from the curriculum model: held-out right tool +8 points, p = 0.019); its first runs
# used G = 4 at 1e-4, which moved nothing. ~25 minutes on 2 cores with the evaluation.
RL := $(OUT)/rl
RL_STEPS ?= 30
RL_GENERATIONS ?= 8
RL_TASKS_PER_STEP ?= 8
RL_LR ?= 3e-4
RL_EVAL_TASKS ?= 200
RL_INIT ?= $$(ls -d $(CURRICULUM)/model/checkpoint-* 2>/dev/null | tail -1 | grep . || ls -d $(DISTILL)/model/checkpoint-* | tail -1)

rl: build
	@mkdir -p $(RL)
	$(HAT) sim tasks --harness $(HARNESS) --n 2000 --split train --viewers-per-room 16 --seed $$(($(SEED) + 2)) $(CATALOG) -o $(RL)/tasks.jsonl
	rm -rf $(RL)/variants
	$(BIN)/hsa-augment --harness $(HARNESS) --out $(RL)/variants --n 8 --pool train --seed $(SEED)
	$(BIN)/grpo-train --model $(RL_INIT) --tasks $(RL)/tasks.jsonl --harness $(HARNESS) \
		$$(for d in $(RL)/variants/variant-*; do echo --harness $$d; done) --faults $(FAULTS) $(CATALOG) \
		--max-steps $(RL_STEPS) --num-generations $(RL_GENERATIONS) --tasks-per-step $(RL_TASKS_PER_STEP) \
		--learning-rate $(RL_LR) --seed $(SEED) --out $(RL)/model --overwrite-output-dir
	$(TD) eval --model sft=$(RL_INIT) --model rl=$(call newest,$(RL)/model) --set original=$(HARNESS) \
		--set heldout=$$(ls -d $(DISTILL)/heldout/variant-* | paste -sd,) --tasks $(DISTILL)/tasks.primary.jsonl \
		--n $(RL_EVAL_TASKS) --faults $(FAULTS) --seed $(SEED) $(CATALOG) --episodes $(RL)/eval.jsonl \
		--summary $(RL)/eval.json | tee $(RL)/eval.md

# --- make reproduce (issue 25): the paper's table at toy scale, every stage a target over files ---
# data     the distill-data sets under $(REPRO)/data, the copy curriculum's rows (make curriculum-data),
#          general prompts (train with answers, held-out eval), and the two SFT arms' records
# copy     the base, first part: $(CURRICULUM_PRESET) from scratch on one-id copy rows   } make curriculum's
# lookup   copy rows of every kind + room-state opening turns                            } copy and lookup
# base     + general SFT and the whole room-state dialogues (the reply reads the tool results): the "base"
#          row, a model that follows general instructions and copies from its context, before any harness
# fixed    fixed-harness SFT from base (original-harness episodes)          } equal compute: same steps,
# hsa      HSA-SFT from base (original + train-pool HSA variants)          } batch, seed; both keep the
#          base's room-state rows and rename product ids per record (only copying lowers their loss);
#          each arm's SFT (into ARM/sft) is followed by a reply polish, R_POLISH_STEPS of the room-state
#          dialogues and a third of the arm's full episodes, into ARM: replies that state what the tools
#          returned
# opd      OPD from HSA-SFT (R_OPD below): base as the general prompts' teacher, HSA-SFT as the domain
#          prompts' (OPD_DOMAIN_SHARE of them): restores what SFT eroded
# rl       HSA-RL (grpo-train) from OPD, train-pool variants and the original harness, faults on, KL to OPD
# eval-X   stage X on Live-Stream QA-lite (primary: held-out tasks, original harness), Harness-Variant QA-lite
#          (the same tasks under 8 held-out variants), Synthetic LS-QA (held-out wording), IFEval-lite
# oracle   the teacher on the same sets (the reference row)
# replay   serve the final model, replay-bench in agent mode at 1 request/s
# report   $(REPRO)/report.md + scores.svg (`hat report`), the wall-clock of each stage from times.tsv
# Each stage leaves $(REPRO)/STAGE.done: `rm $(REPRO)/opd.done && make reproduce` re-runs OPD and what
# follows it. HARNESS=harness-samples/aftersales make reproduce runs it on another harness.
REPRO ?= $(OUT)/reproduce
R_DATA = $(REPRO)/data
# General prompts of the base stage: 128k, about two thirds of its rows beside the curriculum's 68k
# room-state rows. At 32k the base scored 3.0 on IFEval-lite and left OPD nothing to recover; at 128k it
# scored 7.5 and OPD recovered all of SFT's loss (docs/reproduce.md, "General share").
R_GENERAL_TRAIN ?= 128000
# OPD (stage 2, docs/opd.md): the recipe of reproduce's `opd` stage and of `make opd`.
OPD_STEPS ?= 100
OPD_LR ?= 1e-3
# gjsd (TRL GKD's generalized JSD, β 0.5) or reverse_kl (tinker's sampled-token loss); docs/opd.md has
# seeds of both.
OPD_LOSS ?= gjsd
# Share of OPD prompts drawn from the original harness's episodes (every assistant turn) instead of the
# general prompts, and who scores them: sft (the SFT model itself: holds the shop where SFT left it) or
# base (the general teacher scores everything)
OPD_DOMAIN_SHARE ?= 0.25
OPD_DOMAIN_TEACHER ?= sft
# Seed of OPD's draws (prompts, samples); the other stages use SEED.
OPD_SEED ?= $(SEED)
GENERAL_EVAL ?= 200
R_BASE_STEPS ?= 1000
R_SFT_STEPS ?= 200
# The reply polish after each SFT arm: R_POLISH_STEPS, 1e-3 decayed to 0 on a cosine, on the room-state
# dialogues (the calls, the tool results and the reply under a ~200-token prompt, ids renamed) and a third
# of the arm's own full episodes (polish.ARM.jsonl: its harnesses and tool lists, so the polish does not wear
# down the reading of tool names). Six hundred steps on the dialogues alone, on HSA-SFT, two data-order
# seeds: effectiveness 0.333 → 0.372 / 0.380, right tool 0.832 → 0.883 / 0.876 (thirty-ninth session);
# 1,800 steps on them alone found the product more often but made the clarifying question a coin flip between
# seeds (0–24 of 35 clarify tasks) and cost the held-out variants 7–8 points of right tool; 1,800 on the mix,
# from the quoted HSA-SFT: solved 0.410 → 0.495, right tool 0.883 → 0.942, skill selection 0.900 → 0.950,
# variants solved 0.210 → 0.235, right tool 0.664 → 0.708 (and from the plan-reply HSA-SFT, two seeds:
# solved 0.480 / 0.565, right tool 0.949 / 0.949) (docs/learning-default.md, forty-second session). On
# harness-samples/aftersales, whose dialogue rows then kept no prompt, the dialogue polish broke HSA-SFT on two
# seeds (docs/reproduce.md, "Another harness"; they keep its order block now, STATE_SECTIONS, not yet
# measured), so it is on by default for taolive only: R_POLISH_STEPS=1800 turns it on for another harness, to
# be measured there; at 0 the stage's model is its SFT checkpoint, linked into ARM/.
R_POLISH_STEPS ?= $(if $(filter %taolive %taolive/,$(HARNESS)),1800,0)
# The polish of arm $(1) from its SFT model into $(REPRO)/$(1), or with R_POLISH_STEPS=0 that model linked there
# (an earlier polish's checkpoints, metrics and plot removed first).
r-polish = $(if $(filter 0,$(R_POLISH_STEPS)),\
	rm -rf $(REPRO)/$(1)/checkpoint-* $(addprefix $(REPRO)/$(1)/,metrics.jsonl loss.svg train_summary.json) && \
	ln -s sft/$$(basename $(call R_CKPT,$(1)/sft)) $(REPRO)/$(1)/,\
	$(TD) train $(STAGE_FLAGS) --lr-scheduler-type cosine --tokenizer $(R_DATA)/tokenizer \
		--records $(R_DATA)/polish.$(1).jsonl --max-steps $(R_POLISH_STEPS) --save-steps $(R_POLISH_STEPS) \
		--model-init $(call R_CKPT,$(1)/sft) --out $(REPRO)/$(1))
R_OPD_STEPS ?= $(OPD_STEPS)
R_RL_STEPS ?= $(RL_STEPS)
# The RL stage's k3 KL to its start (grpo-train --beta) and how many times the original harness is listed
# beside the 8 train-pool variants (each listing one draw in the uniform choice of harness per task: 8 is
# half the draws). Without them RL on variants drifted from the original harness (docs/grpo.md, "The
# reproduce chain's RL"); with them, and the judge leaving fact-free replies unscored on accuracy, RL
# adds 4 points solved on held-out variants (8 / 0 tasks, p = 0.008): docs/grpo.md, "Unscored accuracy".
R_RL_BETA ?= 0.04
R_RL_ORIGINAL_DRAWS ?= 8
R_EVAL_TASKS ?= 200
# Longest reply (tokens) in the rollout evals and IFEval-lite answers.
R_MAX_TOKENS ?= 160
R_REPLAY_PROMPTS ?= 110
R_STAGES := base fixed hsa opd rl
R_CKPT = $$(ls -d $(REPRO)/$(1)/checkpoint-* | tail -1)
R_TRAIN = $(TD) train --tokenizer $(R_DATA)/tokenizer --learning-rate $(DISTILL_LR) --lr-scheduler-type $(DISTILL_LR_SCHEDULER) --batch-tokens $(DISTILL_BATCH_TOKENS) \
	--gradient-accumulation-steps $(DISTILL_ACCUM) --seed $(SEED) --eval-steps 0 --overwrite-output-dir --mtp-loss-weight $(SFT_MTP_LOSS_WEIGHT)
R_STAGE_TRAIN = $(STAGE_TRAIN) --tokenizer $(R_DATA)/tokenizer
# Every stage's recipe starts with $(r-start) and ends with $(r-end STAGE): seconds into times.tsv.
r-start = @mkdir -p $(REPRO) && date +%s > $@.start
r-end = @echo -e "$(1)\t$$(( $$(date +%s) - $$(cat $@.start) ))" >> $(REPRO)/times.tsv && rm $@.start && touch $@

reproduce: $(REPRO)/report.md
	@cat $(REPRO)/report.md

$(REPRO)/data.done:
	$(r-start)
	$(MAKE) distill-data DISTILL=$(R_DATA)
	$(MAKE) curriculum-data DISTILL=$(R_DATA) CURRICULUM=$(R_DATA)
	$(HAT) general prompts --split train --n $(R_GENERAL_TRAIN) --seed $(SEED) -o $(R_DATA)/general-train.jsonl
	$(HAT) general prompts --split eval --n $(GENERAL_EVAL) --seed $(SEED) -o $(R_DATA)/general-eval.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(R_DATA)/tasks.train.jsonl --variants 0 --faults $(FAULTS) \
		--keep-retry-prob $(DISTILL_KEEP_RETRY) --seed $(SEED) $(CATALOG) -o $(R_DATA)/teacher.fixed.full.jsonl
	$(HAT) records cat $(EVIDENCE) --rename-ids $(SEED) -i $(R_DATA)/teacher.fixed.full.jsonl -o $(R_DATA)/teacher.fixed.full.renamed.jsonl
	$(HAT) records cat $(EVIDENCE) --first-turn --rename-ids $(SEED) -i $(R_DATA)/teacher.original.jsonl -o $(R_DATA)/teacher.fixed.first.renamed.jsonl
	cat $(R_DATA)/teacher.fixed.full.renamed.jsonl $(R_DATA)/teacher.fixed.first.renamed.jsonl $(R_DATA)/reply.jsonl > $(R_DATA)/sft.fixed.jsonl
	cat $(R_DATA)/teacher.full.renamed.jsonl $(R_DATA)/teacher.first.renamed.jsonl $(R_DATA)/reply.jsonl > $(R_DATA)/sft.hsa.jsonl
	cat $(R_DATA)/general-train.jsonl $(R_DATA)/reply.jsonl > $(R_DATA)/base-records.jsonl
	for arm in fixed:teacher.fixed.full hsa:teacher.full; do \
		{ cat $(R_DATA)/dialog.jsonl && $(HAT) records cat --shard 0/3 -i $(R_DATA)/$${arm#*:}.renamed.jsonl; } \
			> $(R_DATA)/polish.$${arm%%:*}.jsonl; done
	$(call r-end,data)

$(REPRO)/copy.done: $(REPRO)/data.done
	$(r-start)
	$(R_STAGE_TRAIN) --model-init $(CURRICULUM_PRESET) --records $(R_DATA)/copy.current.jsonl \
		--max-steps $(COPY_STEPS) --save-steps $(COPY_STEPS) --out $(REPRO)/copy
	$(call r-end,copy)

$(REPRO)/lookup.done: $(REPRO)/copy.done
	$(r-start)
	$(R_STAGE_TRAIN) --model-init $(call R_CKPT,copy) --records $(R_DATA)/lookup.jsonl \
		--max-steps $(LOOKUP_STEPS) --save-steps $(LOOKUP_STEPS) --out $(REPRO)/lookup
	$(call r-end,lookup)

$(REPRO)/base.done: $(REPRO)/lookup.done
	$(r-start)
	$(R_STAGE_TRAIN) --model-init $(call R_CKPT,lookup) --records $(R_DATA)/base-records.jsonl \
		--max-steps $(R_BASE_STEPS) --save-steps $(R_BASE_STEPS) --out $(REPRO)/base
	$(call r-end,base)

$(REPRO)/fixed.done: $(REPRO)/base.done
	$(r-start)
	$(R_TRAIN) --records $(R_DATA)/sft.fixed.jsonl --model-init $(call R_CKPT,base) \
		--max-steps $(R_SFT_STEPS) --save-steps $(R_SFT_STEPS) --out $(REPRO)/fixed/sft
	$(call r-polish,fixed)
	$(call r-end,fixed)

$(REPRO)/hsa.done: $(REPRO)/base.done
	$(r-start)
	$(R_TRAIN) --records $(R_DATA)/sft.hsa.jsonl --model-init $(call R_CKPT,base) \
		--max-steps $(R_SFT_STEPS) --save-steps $(R_SFT_STEPS) --out $(REPRO)/hsa/sft
	$(call r-polish,hsa)
	$(call r-end,hsa)

# OPD from stage $(1)'s SFT model into $(REPRO)/$(2): the base teaches the general prompts, and the SFT
# model itself (OPD_DOMAIN_TEACHER=sft) the domain prompts, a share OPD_DOMAIN_SHARE of each step's.
R_OPD = $(BIN)/opd --model $(call R_CKPT,$(1)) --teacher $(call R_CKPT,base) --prompts $(R_DATA)/general-train.jsonl \
	--max-steps $(R_OPD_STEPS) --save-steps $(R_OPD_STEPS) --learning-rate $(OPD_LR) --seed $(OPD_SEED) \
	--loss $(OPD_LOSS) --domain-prompts $(R_DATA)/teacher.original.jsonl --domain-share $(OPD_DOMAIN_SHARE) \
	$(if $(filter sft,$(OPD_DOMAIN_TEACHER)),--domain-teacher $(call R_CKPT,$(1))) \
	--out $(REPRO)/$(2) --overwrite-output-dir

$(REPRO)/opd.done: $(REPRO)/hsa.done
	$(r-start)
	$(call R_OPD,hsa,opd)
	$(call r-end,opd)

$(REPRO)/rl.done: $(REPRO)/opd.done
	$(r-start)
	$(HAT) sim tasks --harness $(HARNESS) --n 2000 --split train --viewers-per-room 16 --seed $$(($(SEED) + 2)) $(CATALOG) \
		-o $(R_DATA)/tasks.rl.jsonl
	rm -rf $(R_DATA)/rl-variants
	$(BIN)/hsa-augment --harness $(HARNESS) --out $(R_DATA)/rl-variants --n 8 --pool train --seed $(SEED)
	$(BIN)/grpo-train --model $(call R_CKPT,opd) --tasks $(R_DATA)/tasks.rl.jsonl \
		$$(for i in $$(seq $(R_RL_ORIGINAL_DRAWS)); do echo --harness $(HARNESS); done) \
		$$(for d in $(R_DATA)/rl-variants/variant-*; do echo --harness $$d; done) --faults $(FAULTS) $(CATALOG) \
		--max-steps $(R_RL_STEPS) --save-steps $(R_RL_STEPS) --num-generations $(RL_GENERATIONS) --beta $(R_RL_BETA) \
		--tasks-per-step $(RL_TASKS_PER_STEP) --learning-rate $(RL_LR) --seed $(SEED) --out $(REPRO)/rl --overwrite-output-dir
	$(call r-end,rl)

# Stage X's checkpoint on the three QA-lite sets (scored episodes) and IFEval-lite.
R_EVAL = $(TD) eval --tasks $(1) --n $(R_EVAL_TASKS) --max-tokens $(R_MAX_TOKENS) --faults $(FAULTS) --seed $(SEED) $(CATALOG)
$(REPRO)/eval-%.done: $(REPRO)/%.done
	$(r-start)
	@mkdir -p $(REPRO)/eval $(REPRO)/ifeval
	$(call R_EVAL,$(R_DATA)/tasks.primary.jsonl) --model $*=$(call R_CKPT,$*) --set primary=$(HARNESS) \
		--episodes $(REPRO)/eval/$*.primary.jsonl > /dev/null
	$(call R_EVAL,$(R_DATA)/tasks.primary.jsonl) --model $*=$(call R_CKPT,$*) \
		--set heldout=$$(ls -d $(R_DATA)/heldout/variant-* | paste -sd,) --episodes $(REPRO)/eval/$*.heldout.jsonl > /dev/null
	$(call R_EVAL,$(R_DATA)/tasks.phrasings.jsonl) --model $*=$(call R_CKPT,$*) --set phrasings=$(HARNESS) \
		--episodes $(REPRO)/eval/$*.phrasings.jsonl > /dev/null
	$(HAT) general eval --model $(call R_CKPT,$*) --input $(R_DATA)/general-eval.jsonl --max-new-tokens $(R_MAX_TOKENS) \
		--answers $(REPRO)/ifeval/$*.answers.jsonl > $(REPRO)/ifeval/$*.json
	$(call r-end,eval-$*)

# The teacher (oracle) on the same tasks, the same faults and seed: the reference row.
$(REPRO)/oracle.done: $(REPRO)/data.done
	$(r-start)
	@mkdir -p $(REPRO)/eval
	for set in primary phrasings; do \
		head -n $(R_EVAL_TASKS) $(R_DATA)/tasks.$$set.jsonl | $(HAT) sim rollout --harness $(HARNESS) --tasks - \
			--faults $(FAULTS) --seed $(SEED) $(CATALOG) -o - | $(BIN)/judge score -i - -o $(REPRO)/eval/oracle.$$set.jsonl; \
	done
	$(call r-end,oracle)

$(REPRO)/replay.done: $(REPRO)/rl.done
	$(r-start)
	scripts/serve_and_replay.sh $(BIN) $(call R_CKPT,rl) $(HARNESS) $(R_REPLAY_PROMPTS) $(REPRO)/replay
	$(call r-end,replay)

$(REPRO)/report.md: $(foreach s,$(R_STAGES),$(REPRO)/eval-$(s).done) $(REPRO)/oracle.done $(REPRO)/replay.done
	$(HAT) report --dir $(REPRO) --stage base=Base --stage 'fixed=Fixed-harness SFT' --stage hsa=HSA-SFT \
		--stage 'opd=+ OPD' --stage 'rl=+ HSA-RL (HAT)' --oracle 'oracle=Teacher (oracle)' -o $@ > /dev/null

# --- make opd (issue 23): domain SFT erodes general ability, OPD restores it ---
# make reproduce's data, base and fixed-harness SFT (the same files under $(REPRO): after `make
# reproduce` only the last two stages run), then
#  opd-fixed       OPD from the fixed-harness SFT model, reproduce's recipe (R_OPD above)
#  eval-opd-fixed  the stage's QA-lite sets and IFEval-lite, as for every stage
#  opd.md          base → fixed SFT → + OPD: the scores, the paired tests (IFEval-lite prompt strict, and
#                  right tool / solved on Live-Stream QA-lite), and the share of SFT's IFEval-lite loss
#                  won back at all four levels with a 95% bootstrap interval (`hat general recovery`);
#                  the bars are opd-scores.svg, the reverse-KL curve $(REPRO)/opd-fixed/opd.svg
opd: build $(REPRO)/opd.md
	@cat $(REPRO)/opd.md

$(REPRO)/opd-fixed.done: $(REPRO)/fixed.done
	$(r-start)
	$(call R_OPD,fixed,opd-fixed)
	$(call r-end,opd-fixed)

$(REPRO)/opd.md: $(REPRO)/eval-base.done $(REPRO)/eval-fixed.done $(REPRO)/eval-opd-fixed.done
	$(HAT) report --dir $(REPRO) --stage base=Base --stage 'fixed=Fixed-harness SFT' --stage 'opd-fixed=+ OPD' \
		-o $@.tmp --plot $(REPRO)/opd-scores.svg > /dev/null
	echo -e "\n## Share of the IFEval-lite loss recovered (hat general recovery)\n" >> $@.tmp
	$(HAT) general recovery $(REPRO)/ifeval/base.answers.jsonl $(REPRO)/ifeval/fixed.answers.jsonl \
		$(REPRO)/ifeval/opd-fixed.answers.jsonl 2>> $@.tmp > $(REPRO)/opd-recovery.json
	mv $@.tmp $@

# The same chain and make opd with tiny budgets (≤ 10 minutes on 2 cores): to see every stage run, not to read results.
demo:
	$(MAKE) reproduce opd REPRO=$(OUT)/demo DISTILL_PRODUCTS=60 DISTILL_TASKS=160 DISTILL_FIRST_TASKS=320 DISTILL_VARIANTS=4 \
		DISTILL_EVAL_TASKS=6 R_EVAL_TASKS=6 R_MAX_TOKENS=32 R_GENERAL_TRAIN=200 GENERAL_EVAL=6 DISTILL_BATCH_TOKENS=4096 DISTILL_ACCUM=1 \
		COPY_ROWS=200 LOOKUP_COPY_ROWS=200 COPY_STEPS=2 LOOKUP_STEPS=2 R_BASE_STEPS=4 R_SFT_STEPS=4 R_POLISH_STEPS=2 R_OPD_STEPS=2 R_RL_STEPS=1 RL_TASKS_PER_STEP=2 RL_GENERATIONS=2 R_REPLAY_PROMPTS=8

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

# The device run of docs/gpu/ (scripts/gpu_check.sh): the CUDA build of the parity tests, the GPU bench and
# teacher-distill, packed into gpu-run/bins.tar.xz (the device tool carries 64 MiB), plus SFT records of
# the sample harness, their tokenizer, and the CPU's losses for the same SFT steps of `small`.
GPU_RUN = gpu-run
GPU_TARGET ?= target
GPU_CARGO = CARGO_TARGET_DIR=$(GPU_TARGET) $(CARGO)
GPU_SFT_ARGS = --model-init small --records $(GPU_RUN)/sft/teacher.jsonl --tokenizer $(GPU_RUN)/sft/tokenizer \
	--max-steps 8 --batch-tokens 4096 --learning-rate 1e-3 --warmup-steps 2 --seed $(SEED) --eval-steps 0 \
	--save-steps 8 --overwrite-output-dir
gpu-prepare: build
	rm -rf $(GPU_RUN) && mkdir -p $(GPU_RUN)/sft
	$(HAT) sim tasks --harness $(HARNESS) --n 200 --split train --seed $(SEED) -o $(GPU_RUN)/sft/tasks.jsonl
	$(TD) collect --harness $(HARNESS) --tasks $(GPU_RUN)/sft/tasks.jsonl --variants 0 --seed $(SEED) \
		-o $(GPU_RUN)/sft/teacher.jsonl
	$(HAT) tokenizer train --records $(GPU_RUN)/sft/teacher.jsonl --harness $(HARNESS) --vocab-size 4096 \
		--out $(GPU_RUN)/sft/tokenizer
	echo '$(GPU_SFT_ARGS)' > $(GPU_RUN)/sft.args
	$(TD) train $(GPU_SFT_ARGS) --out $(GPU_RUN)/sft-cpu && rm -rf $(GPU_RUN)/sft-cpu/checkpoint-*
	$(GPU_CARGO) build --release --features cuda --bin teacher-distill
	$(GPU_CARGO) test --release --features cuda --test model --no-run 2>&1 | tee $(GPU_RUN)/build.log
	$(GPU_CARGO) bench --features cuda --bench gpu --no-run 2>&1 | tee -a $(GPU_RUN)/build.log
	cp $(GPU_TARGET)/release/teacher-distill $(GPU_RUN)/teacher-distill
	cp $$(grep -o '[^ (]*/deps/model-[0-9a-f]*' $(GPU_RUN)/build.log | tail -1) $(GPU_RUN)/model-test
	cp $$(grep -o '[^ (]*/deps/gpu-[0-9a-f]*' $(GPU_RUN)/build.log | tail -1) $(GPU_RUN)/gpu-bench
	strip $(GPU_RUN)/teacher-distill $(GPU_RUN)/model-test $(GPU_RUN)/gpu-bench
	cd $(GPU_RUN) && tar -cJf bins.tar.xz teacher-distill model-test gpu-bench && rm teacher-distill model-test gpu-bench
	echo $(CURDIR) > $(GPU_RUN)/manifest_dir
	du -sh $(GPU_RUN)

# Model and training throughput against transformers/PyTorch on the same weights (needs python3 with
# torch and transformers): our bench writes the checkpoints, the scripts measure the reference, our bench
# prints the ratios.
bench-model:
	$(CARGO) bench --bench model
	python3 scripts/bench_transformers.py
	$(CARGO) bench --bench model

# Ours against llama.cpp (llama-cpp-python's C API, built here for this CPU) on the same weights at
# f32, bf16 and int8/q8_0, after checking that both compute the same logits; alternating rounds, table
# in out/bench-llamacpp/report.md. Set-up (once, into .venv/): llama-cpp-python, torch and transformers
# from PyPI, and llama.cpp's converter from the llama-cpp-python sdist. About 20 minutes on 2 cores.
LLAMACPP_PY ?= 0.3.36
LLAMACPP_SRC := .venv/src/llama_cpp_python-$(LLAMACPP_PY)/vendor/llama.cpp
BENCH_ROUNDS ?= 3
.venv/llamacpp-$(LLAMACPP_PY).stamp:
	python3 -m venv .venv
	.venv/bin/pip install numpy safetensors sentencepiece transformers torch
	CMAKE_ARGS="-DGGML_NATIVE=ON" .venv/bin/pip install llama-cpp-python==$(LLAMACPP_PY)
	.venv/bin/pip download --no-binary llama-cpp-python --no-deps llama-cpp-python==$(LLAMACPP_PY) -d .venv/src
	tar xzf .venv/src/llama_cpp_python-$(LLAMACPP_PY).tar.gz -C .venv/src
	touch $@

bench-llamacpp: .venv/llamacpp-$(LLAMACPP_PY).stamp $(OUT)/tokenizer/tokenizer.json
	.venv/bin/python scripts/bench_llamacpp.py --converter $(LLAMACPP_SRC) --tokenizer $(OUT)/tokenizer \
		--rounds $(BENCH_ROUNDS) --out $(OUT)/bench-llamacpp

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

# The verl and OpenRLHF adapters (examples/verl, examples/openrlhf) driven as their engines drive them,
# against live `hat sim serve` and `judge serve` (issue 27; docs/services.md). Python standard library only.
adapters-test:
	$(CARGO) build --bin hat --bin judge
	HAT_BIN_DIR=$(CURDIR)/target/debug python3 tests/adapters/test_adapters.py

# Loopback load test of both services: 200 concurrent episodes, 10,000 reward requests (docs/services.md).
# Dev profile (dependencies at opt-level 3): a release build of the crate takes most of an hour on 2 cores.
services-loadtest:
	$(CARGO) bench --profile dev --bench services

# The official openai Python client against a live server (CI runs this after `make test`).
openai-client-test:
	$(CARGO) build --bin serve --bin hat
	tests/openai_client/run.sh

# --- fuzzing (issue 30; docs/fuzzing.md) ---
# Stable toolchain: libFuzzer comes from the libfuzzer-sys crate, coverage flags from fuzz/rustc-wrapper.sh.
FUZZ_SECONDS ?= 120
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) OUT=$(OUT) CARGO=$(CARGO) scripts/fuzz.sh
