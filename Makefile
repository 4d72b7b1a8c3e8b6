# HAT toolkit — the pipeline on the embedded default, the tests, the benchmarks.
#   make run     set up and run what the toolkit does on the sample harness (the main job)
#   make test    the test suite (what CI runs)
#   make bench   benchmarks that print figures
SHELL := /bin/bash
CARGO ?= cargo
HARNESS ?= harness-samples/taolive
OUT ?= out
HAT := target/release/hat

.PHONY: run build test bench fixtures clean-out

build:
	$(CARGO) build --release --bins

run: build
	@mkdir -p $(OUT)
	$(HAT) harness validate $(HARNESS)
	$(HAT) harness hash $(HARNESS)
	$(HAT) harness render $(HARNESS) > $(OUT)/system_prompt.txt
	@echo "rendered system prompt: $(OUT)/system_prompt.txt ($$(wc -c < $(OUT)/system_prompt.txt) bytes)"

test:
	$(CARGO) test

bench:
	$(CARGO) bench --bench jsonl

clean-out:
	rm -rf $(OUT)
