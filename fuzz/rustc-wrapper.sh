#!/bin/sh
# RUSTC_WRAPPER for the fuzz build (fuzz/build.sh): adds libFuzzer's coverage instrumentation
# (the flags cargo-fuzz passes) to the `hat` library and the fuzz targets only. The dependencies
# stay exactly as `cargo build` made them, so the shared target directory reuses them instead of
# rebuilding burn, tokenizers, axum and the rest instrumented on a 2-core box.
rustc="$1"
shift
case "$CARGO_PKG_NAME" in
hat | hat-fuzz)
    case " $* " in
    *" --crate-name build_script_build "*) ;;
    *)
        exec "$rustc" "$@" --cfg fuzzing \
            -Cpasses=sancov-module \
            -Cllvm-args=-sanitizer-coverage-level=4 \
            -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
            -Cllvm-args=-sanitizer-coverage-pc-table \
            -Cllvm-args=-sanitizer-coverage-trace-compares
        ;;
    esac
    ;;
esac
exec "$rustc" "$@"
