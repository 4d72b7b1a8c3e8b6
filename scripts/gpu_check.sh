#!/usr/bin/env bash
# Issue 29's device run, in one call: the transformers parity fixtures on the CUDA backend (f32 and
# bf16), a few SFT steps of `small` on the GPU (their losses against the CPU run's, made beforehand
# by `make gpu-prepare`), then the throughput bench (benches/gpu.rs). Everything it runs was built
# on the CPU machine by `make gpu-prepare` into gpu-run/ (git-ignored, x86-64); each part has its
# own time limit and writes its log under $OUT, so a part that fails or runs out of time still
# leaves the others' results.
#
#   run (device tool): bash scripts/gpu_check.sh [parity] [sft] [bench]     carry: gpu-run
# With no argument it runs all three parts (of about 150, 110 and 340 s at most).
set -u
parts=${*:-parity sft bench}
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

[ -x gpu-run/model-test ] || tar -xJf gpu-run/bins.tar.xz -C gpu-run || exit 1
# cudarc loads libcuda and libnvrtc at run time: the driver's folder, the toolkit's, and the
# nvidia-cuda-nvrtc wheel beside PyTorch.
for d in /usr/local/nvidia/lib64 /usr/local/cuda/lib64 \
    $(python3 -c 'import nvidia, os; print(" ".join(p + "/cuda_nvrtc/lib" for p in nvidia.__path__))' 2>/dev/null) \
    $(for lib in libnvrtc.so libcuda.so; do find /usr /opt -name "$lib*" 2>/dev/null | head -1 | xargs -r dirname; done); do
    LD_LIBRARY_PATH=$d:${LD_LIBRARY_PATH:-}
done
export LD_LIBRARY_PATH CUBECL_AUTOTUNE_LEVEL=minimal RUST_BACKTRACE=1
# The test binary finds testdata/ under the folder it was built in.
built_in=$(cat gpu-run/manifest_dir)
[ -d "$built_in/testdata" ] || { mkdir -p "$(dirname "$built_in")"; ln -sfn "$PWD" "$built_in"; }

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ls /usr/local/cuda/lib64/libnvrtc* 2>&1 | head -3
} >"$OUT/machine.txt" 2>&1

case " $parts " in *" parity "*)
    echo "== parity (tests/model.rs on Cuda<f32> and Cuda<bf16>)"
    timeout 150 gpu-run/model-test --nocapture --test-threads 1 >"$OUT/parity.log" 2>&1
    echo "exit $?" >>"$OUT/parity.log"
    grep -E "^parity|^test |test result|panicked|^exit" "$OUT/parity.log"
esac

case " $parts " in *" sft "*)
    echo "== SFT steps of small on the GPU"
    timeout 110 gpu-run/teacher-distill train $(cat gpu-run/sft.args) --out /tmp/sft-gpu >"$OUT/sft.log" 2>&1
    echo "exit $?" >>"$OUT/sft.log"
    cp /tmp/sft-gpu/metrics.jsonl "$OUT/sft-gpu.metrics.jsonl" 2>/dev/null
    tail -3 "$OUT/sft.log"
esac

case " $parts " in *" bench "*)
    echo "== throughput"
    timeout 250 gpu-run/gpu-bench >"$OUT/bench.md" 2>"$OUT/bench.err"
    echo "exit $?" >>"$OUT/bench.err"
    cat "$OUT/bench.md"
    tail -5 "$OUT/bench.err"
    # Where gpu-run/gpu-bench-loop exists (the bench built by hand before the MoE block's
    # dispatch was batched: one upload and one scatter per expert), the 35B shape's 4 layers on it.
    if [ -x gpu-run/gpu-bench-loop ]; then
        echo "== throughput, per-expert dispatch"
        HAT_GPU_SMALL=0 HAT_GPU_LAYERS=4 timeout 90 gpu-run/gpu-bench-loop >"$OUT/bench-loop.md" 2>&1
        echo "exit $?" >>"$OUT/bench-loop.md"
        cat "$OUT/bench-loop.md"
    fi
esac
