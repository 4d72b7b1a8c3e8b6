#!/usr/bin/env bash
# Build the binaries and examples, run every example and every pipeline in examples/pipelines, and fail
# unless each exits 0 and prints something. CI runs it from `make test` on the debug build that
# `cargo test` has just made, so it adds no second (release) build; `PROFILE=release` uses release.
#
#   examples/run_all.sh                 PROFILE=release examples/run_all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-debug}
CARGO=${CARGO:-cargo}
case "$PROFILE" in
  debug) "$CARGO" build --bins --examples ;;
  release) "$CARGO" build --release --bins --examples ;;
  *) echo "PROFILE must be debug or release, not '$PROFILE'" >&2; exit 2 ;;
esac
export BIN=$PWD/target/$PROFILE
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

failed=0
# The first non-empty line, shortened (by characters under a UTF-8 locale, by bytes under C).
first_line() {
  local line
  line=$(grep -m1 . "$1")
  echo "${line:0:60}"
}
# run NAME COMMAND...: stdout and stderr to logs; a failure prints both.
run() {
  local name=$1
  shift
  local log=$LOGS/${name//\//_} start=$SECONDS
  if "$@" >"$log.out" 2>"$log.err" && [ -s "$log.out" ]; then
    printf 'ok    %-28s %3ds  %5d lines  %s\n' "$name" $((SECONDS - start)) \
      "$(wc -l <"$log.out")" "$(first_line "$log.out")"
  else
    printf 'FAIL  %-28s (exit or empty output)\n' "$name"
    sed 's/^/    out| /' "$log.out" | tail -20
    sed 's/^/    err| /' "$log.err" | tail -20
    failed=1
  fi
}

for src in examples/*.rs; do
  name=$(basename "$src" .rs)
  run "$name" "$BIN/examples/$name"
done
for script in examples/pipelines/*.sh; do
  run "pipelines/$(basename "$script")" "$script"
done
echo "examples: $([ $failed = 0 ] && echo all passed || echo some FAILED) in ${SECONDS}s"
exit $failed
