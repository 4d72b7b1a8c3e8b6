#!/usr/bin/env python3
"""Our CPU inference side by side with llama.cpp on the same weights (`make bench-llamacpp`).

For each bench shape (`tiny`, `small`: Qwen3.5 hybrid MoE; `small-qwen3`: Qwen3-MoE), the checkpoint
`cargo bench --bench model` writes to target/bench-model/<shape>/ is converted to GGUF with llama.cpp's
own converter (convert_hf_to_gguf.py from the llama-cpp-python sdist) at f32, bf16 and q8_0. Before
anything is timed, llama.cpp's f32 logits at the prompt's last position are checked against ours
(`ours.json`, written by the bench), so both run the same model; the reduced pairs' differences are
reported (each side rounds its own way: bf16 the same, int8 per channel against q8_0 per 32 values). Then ROUNDS alternating rounds, each
running our bench binary and then llama.cpp (through llama-cpp-python's C API, 2 threads), with the
bench's measurement: a PROMPT-token prompt of ids (i*7919+13) % vocab, prefill = best of 3 with logits at
the last position, decode = DECODE single-token steps after the prompt fed ids (r*31+step) % vocab, and
the same with 4 sequences decoded in one batch (prompts 128, 124, 120, 116 tokens).

Pairs compared: f32/f32, bf16/bf16, our int8 (per-channel weight-only) / llama.cpp q8_0 (per-32 block).
Prints a table (ranges over rounds; ratio = ours / llama.cpp, per round) and writes it with the raw
figures to out/bench-llamacpp/ (report.md, results.json).

Usage: bench_llamacpp.py --converter DIR --tokenizer DIR [--rounds 3] [--shapes tiny,small,small-qwen3]
Environment: HAT_BENCH_PROMPT (128), HAT_BENCH_DECODE (64), as the Rust bench.
"""
import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [("f32", "f32"), ("bf16", "bf16"), ("int8", "q8_0")]  # (ours, llama.cpp)
BATCH = 4
THREADS = os.cpu_count() or 1  # the Rust bench uses every core too


def convert(converter: Path, model_dir: Path, outtype: str, out: Path):
    """Runs llama.cpp's converter in a child process, with two things told to it:
    * our BPE is not in its table of known pre-tokenizers (a hash of how a fixed text tokenises); the
      token ids are given directly in this bench, so the pre-tokenizer only has to be named: Qwen2's;
    * llama.cpp runs Qwen3.5 attention with multi-axis RoPE and, when the config has no
      `mrope_section`, writes Qwen3.5-35B's [11, 11, 10], which only fits its rotary width (64 dims).
      With text positions (all axes equal) any split of the rotary pairs is plain RoPE, so the
      checkpoint's own rotary pairs are split in three."""
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/gguf-py']\n"
        "from conversion.base import TextModel\n"
        "from conversion.qwen import _Qwen35MRopeMixin as M\n"
        "TextModel.get_vocab_base_pre = lambda self, tokenizer: 'qwen2'\n"
        "def sections(self, plain=M.set_gguf_parameters):\n"
        "    pairs = int(self.hparams['head_dim'] * self.rope_parameters.get('partial_rotary_factor', 1.0)) // 2\n"
        "    self.rope_parameters.setdefault('mrope_section', [pairs - 2 * (pairs // 3), pairs // 3, pairs // 3])\n"
        "    plain(self)\n"
        "M.set_gguf_parameters = sections\n"
        "import convert_hf_to_gguf as c\n"
        "sys.argv = ['convert_hf_to_gguf.py', sys.argv[2], '--outtype', sys.argv[3], '--outfile', sys.argv[4]]\n"
        "c.main()\n"
    )
    tmp = out.with_suffix(".partial")
    subprocess.run([sys.executable, "-c", code, str(converter), str(model_dir), outtype, str(tmp)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tmp.rename(out)


_QUIET = None


def _start(L):
    """Once per process: llama.cpp's backends, and a log callback that drops its load-time chatter
    (kept alive here: C holds the pointer)."""
    global _QUIET
    if _QUIET is None:
        L.llama_backend_init()
        _QUIET = L.llama_log_callback(lambda level, text, user_data: None)
        L.llama_log_set(_QUIET, ctypes.c_void_p(0))


class LlamaCpp:
    """One GGUF model with a context for BATCH sequences, driven token by token through the C API."""

    def __init__(self, path: Path, n_ctx: int, gguf_type: str):
        import llama_cpp as L

        self.L = L
        _start(L)
        mp = L.llama_model_default_params()
        # On a CPU with AMX, llama.cpp repacks q8_0 weights for its AMX kernels, and with these
        # checkpoints the first decode then crashes (segfault, llama-cpp-python 0.3.36); without the
        # extra buffer types it runs its ordinary q8_0 kernels (AVX-512 VNNI dot products).
        mp.use_extra_bufts = gguf_type != "q8_0"
        self.model = L.llama_model_load_from_file(str(path).encode(), mp)
        if not self.model:
            sys.exit(f"{path}: llama.cpp could not load it")
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx * BATCH
        cp.n_batch = cp.n_ubatch = max(512, n_ctx)
        cp.n_seq_max = BATCH
        cp.n_threads = cp.n_threads_batch = THREADS
        self.ctx = L.llama_init_from_model(self.model, cp)
        self.vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))
        self.batch = L.llama_batch_init(cp.n_batch, 0, BATCH)

    def close(self):
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)
        self.L.llama_model_free(self.model)

    def clear(self):
        self.L.llama_memory_clear(self.L.llama_get_memory(self.ctx), True)

    def decode(self, items):
        """items: (token, position, sequence, wants_logits) per batch row."""
        b = self.batch
        b.n_tokens = len(items)
        for i, (tok, pos, seq, logits) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = tok, pos, 1, logits
            b.seq_id[i][0] = seq
        if self.L.llama_decode(self.ctx, b) != 0:
            sys.exit("llama_decode failed")

    def prefill(self, prompt, seq=0):
        n = len(prompt)
        self.decode([(t, p, seq, p == n - 1) for p, t in enumerate(prompt)])

    def last_logits(self):
        ptr = self.L.llama_get_logits_ith(self.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.vocab,)).copy()


def prompt_ids(vocab, n):
    return [(i * 7919 + 13) % vocab for i in range(n)]


def measure(m: LlamaCpp, prompt_len, decode):
    prompt = prompt_ids(m.vocab, prompt_len)
    m.prefill(prompt[:8])  # warm-up, as the Rust bench
    m.clear()
    best = float("inf")
    for _ in range(3):
        m.clear()
        t0 = time.perf_counter()
        m.prefill(prompt)
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    for step in range(decode):
        m.decode([(step % m.vocab, prompt_len + step, 0, True)])
    single = decode / (time.perf_counter() - t0)
    m.clear()
    lengths = [prompt_len - r * 4 for r in range(BATCH)]
    for r, n in enumerate(lengths):
        m.prefill(prompt[:n], seq=r)
    t0 = time.perf_counter()
    for step in range(decode):
        m.decode([((r * 31 + step) % m.vocab, lengths[r] + step, r, True) for r in range(BATCH)])
    batched = BATCH * decode / (time.perf_counter() - t0)
    return {"prefill_tokens_per_s": prompt_len / best, "decode_tokens_per_s": single,
            "decode_batch_tokens_per_s": batched}


def check_logits(m: LlamaCpp, ours, prompt_len):
    m.clear()
    m.prefill(prompt_ids(m.vocab, prompt_len))
    theirs = m.last_logits()
    ours = np.asarray(ours, dtype=np.float32)
    return {"max_abs_diff": float(np.max(np.abs(theirs[: len(ours)] - ours))),
            "max_abs_logit": float(np.max(np.abs(ours))),
            "same_argmax": bool(int(np.argmax(theirs[: len(ours)])) == int(np.argmax(ours)))}


def run_ours(shapes, prompt_len, decode):
    env = dict(os.environ, HAT_BENCH_SHAPES=",".join(shapes), HAT_BENCH_AGREE="0",
               HAT_BENCH_DTYPES=",".join(o for o, _ in PAIRS),
               HAT_BENCH_PROMPT=str(prompt_len), HAT_BENCH_DECODE=str(decode))
    subprocess.run([os.environ.get("CARGO", "cargo"), "bench", "--bench", "model"], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    return {s: json.loads((ROOT / "target/bench-model" / s / "ours.json").read_text())["figures"] for s in shapes}


def span(xs, fmt="{:.1f}"):
    return fmt.format(min(xs)) if len(xs) == 1 else f"{fmt.format(min(xs))}–{fmt.format(max(xs))}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--converter", type=Path, required=True, help="llama.cpp source dir with convert_hf_to_gguf.py")
    ap.add_argument("--tokenizer", type=Path, required=True, help="dir with our tokenizer.json (for the GGUF vocabulary)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", default="tiny,small,small-qwen3")
    ap.add_argument("--out", type=Path, default=ROOT / "out/bench-llamacpp")
    args = ap.parse_args()
    prompt_len = int(os.environ.get("HAT_BENCH_PROMPT", 128))
    decode = int(os.environ.get("HAT_BENCH_DECODE", 64))
    shapes = args.shapes.split(",")

    print(f"round 0: our bench writes the checkpoints ({', '.join(shapes)})", file=sys.stderr)
    ours_rounds = [run_ours(shapes, prompt_len, decode)]
    check, ggufs = {}, {}
    for s in shapes:
        d = ROOT / "target/bench-model" / s
        for f in ("tokenizer.json", "tokenizer_config.json"):
            if (args.tokenizer / f).exists():
                shutil.copy(args.tokenizer / f, d / f)
        for _, q in PAIRS:
            g = d / f"llamacpp-{q}.gguf"
            if not g.exists():
                print(f"converting {s} to {g.name}", file=sys.stderr)
                convert(args.converter, d, q, g)
            ggufs[s, q] = g
        ours_logits = json.loads((d / "ours.json").read_text())["last_logits"]
        for o, q in PAIRS:
            m = LlamaCpp(ggufs[s, q], prompt_len + decode + 8, q)
            check[s, q] = check_logits(m, ours_logits[o], prompt_len)
            m.close()
        c = check[s, "f32"]
        print(f"{s}: llama.cpp f32 vs ours f32, last-position logits: max |diff| {c['max_abs_diff']:.2e} "
              f"(max |logit| {c['max_abs_logit']:.2f}), same argmax: {c['same_argmax']}", file=sys.stderr)
        if not c["same_argmax"] or c["max_abs_diff"] > 1e-2 * max(1.0, c["max_abs_logit"]):
            sys.exit(f"{s}: llama.cpp does not compute the same model as ours; not timing it")

    llama_rounds = []
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}: ours, then llama.cpp", file=sys.stderr)
        if r > 0:
            ours_rounds.append(run_ours(shapes, prompt_len, decode))
        figs = {}
        for s in shapes:
            for _, q in PAIRS:
                m = LlamaCpp(ggufs[s, q], prompt_len + decode + 8, q)
                figs[s, q] = measure(m, prompt_len, decode)
                m.close()
        llama_rounds.append(figs)

    metrics = [("prefill_tokens_per_s", "prefill"), ("decode_tokens_per_s", "decode"),
               ("decode_batch_tokens_per_s", f"decode ×{BATCH}")]
    lines = [f"# Ours vs llama.cpp, same weights ({THREADS} threads, prompt {prompt_len}, {decode} decode steps, "
             f"{args.rounds} alternating rounds; ranges over rounds, ratio = ours ÷ llama.cpp per round)", "",
             "| shape | ours / llama.cpp | " + " | ".join(f"{n} ours | {n} llama.cpp | {n} ratio" for _, n in metrics)
             + " | last-position logits, llama.cpp vs ours |",
             "|---|---|" + "---|---|---|" * len(metrics) + "---|"]
    results = []
    for s in shapes:
        for o, q in PAIRS:
            cells = []
            for key, _ in metrics:
                ours = [rd[s][o][key] for rd in ours_rounds[1:] or ours_rounds]
                theirs = [rd[s, q][key] for rd in llama_rounds]
                ratios = [a / b for a, b in zip(ours, theirs)]
                cells += [span(ours), span(theirs), span(ratios, "{:.2f}×")]
                results.append({"shape": s, "ours": o, "llama_cpp": q, "metric": key, "ours_tok_s": ours,
                                "llama_cpp_tok_s": theirs, "ratio": ratios})
            c = check[s, q]
            cells.append(f"{c['max_abs_diff']:.1e} ({'same' if c['same_argmax'] else 'different'} argmax)")
            lines.append(f"| {s} | {o} / {q} | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n"
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.md").write_text(table)
    (args.out / "results.json").write_text(json.dumps(
        {"threads": THREADS, "prompt_tokens": prompt_len, "decode_tokens": decode, "rounds": args.rounds,
         "logit_check": [{"shape": s, "gguf": q, **v} for (s, q), v in check.items()], "figures": results}, indent=1))
    print(f"written to {args.out}/report.md and results.json", file=sys.stderr)


if __name__ == "__main__":
    main()
