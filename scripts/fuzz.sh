#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets of fuzz/ and runs each for FUZZ_SECONDS (default 120),
# one at a time under nice, then prints executions, coverage and findings per target.
#   FUZZ_TARGETS="tool_calls harness"  run only these
#   FUZZ_JOBS=2                        run two targets at once (never more on a 2-core box)
# New corpus entries go to out/fuzz/corpus/<target>/ (the committed seeds in testdata/fuzz/<target>/
# are read, never written); crashes, timeouts (>1 s) and OOMs to out/fuzz/artifacts/<target>/.
# Exit status 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-120}
JOBS=${FUZZ_JOBS:-1}
OUT=${OUT:-out}/fuzz
TARGETS=${FUZZ_TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^hat-fuzz$')}

# Stable toolchain, the main target directory, coverage flags on the library and targets only
# (fuzz/rustc-wrapper.sh): the dependencies `cargo build` already made are reused as they are.
RUSTC_WRAPPER="$PWD/fuzz/rustc-wrapper.sh" CARGO_TARGET_DIR="$PWD/target" \
    nice -n 19 "${CARGO:-cargo}" build -j1 --manifest-path fuzz/Cargo.toml --bins

# Each fuzzer on one core (`taskset`): the model's spinning helper threads and rayon then stay off,
# which a shared box needs (a helper waiting for a core made serve_http's requests take seconds).
CORES=$(nproc)
# An input running over 1 s is a finding, except for serve_http, whose inputs are whole HTTP requests
# with a prefill and decode: at load 8 on the shared 2-core box, scheduler stalls alone pushed 0.6 s
# requests over 1 s. FUZZ_SERVE_TIMEOUT=1 restores the strict limit on a quiet machine.
run_one() {
    local t=$1 core=$2 limit=1
    [ "$t" = serve_http ] && limit=${FUZZ_SERVE_TIMEOUT:-3}
    mkdir -p "$OUT/corpus/$t" "$OUT/artifacts/$t"
    nice -n 19 taskset -c "$core" "target/debug/$t" -max_total_time="$SECONDS_EACH" -timeout="$limit" -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t/" \
        "$OUT/corpus/$t" "testdata/fuzz/$t" >"$OUT/$t.log" 2>&1 || true
}

running=0
started=0
for t in $TARGETS; do
    run_one "$t" $((started % CORES)) &
    started=$((started + 1))
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

found=0
printf '%-14s %10s %8s %8s %7s  %s\n' target execs exec/s cov corpus findings
for t in $TARGETS; do
    log="$OUT/$t.log"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    findings=$(find "$OUT/artifacts/$t" -type f | wc -l)
    printf '%-14s %10s %8s %8s %7s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${corpus:-?}" "$findings"
    if [ "$findings" -gt 0 ]; then
        found=1
        find "$OUT/artifacts/$t" -type f | sed 's/^/    /'
        grep -m3 -E "panicked at|ERROR: libFuzzer" "$log" | sed 's/^/    /'
    fi
done
exit "$found"
