"""HSA over a large trajectory stream as a Ray job: N tasks, each running `hsa-augment --shard K/N` on
the same input (a record goes to shard K by a hash of its id, so the shards partition the stream and
every record is augmented exactly as in a single run), outputs gathered and concatenated.

    pip install ray
    python examples/ray/hsa_augment_sharded.py --bin target/release/hsa-augment \
        --harness harness-samples/taolive --input teacher.jsonl --output teacher.hsa.jsonl --shards 4 --verify

On a cluster, `ray.init(address="auto")` picks the running cluster up (RAY_ADDRESS); the input and the
harness must then be on a filesystem every node sees. `--verify` also runs the single-process command and
checks that both outputs hold the same lines once sorted by record id (the shard order differs).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import ray


def augment_command(a, out, shard=None):
    cmd = [a.bin, "--harness", a.harness, "-i", a.input, "-o", out, "--n", str(a.n), "--seed", str(a.seed)]
    if shard is not None:
        cmd += ["--shard", shard]
    return cmd


@ray.remote
def augment_shard(cmd):
    """One shard: the command's output file's bytes (stderr kept for the error message)."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    with open(cmd[cmd.index("-o") + 1], "rb") as f:
        return f.read()


def sorted_by_id(data):
    lines = [l for l in data.splitlines() if l.strip()]
    return sorted(lines, key=lambda l: (json.loads(l)["id"], l))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="the hsa-augment binary")
    p.add_argument("--harness", required=True)
    p.add_argument("--input", required=True, help="trajectory JSONL")
    p.add_argument("--output", required=True)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--n", type=int, default=2, help="augmented copies per record (hsa-augment --n)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--verify", action="store_true", help="compare with the single-process run")
    a = p.parse_args()
    for path in (a.bin, a.harness, a.input):
        if not os.path.exists(path):
            sys.exit(f"hsa_augment_sharded: {path}: not found")

    ray.init(address=os.environ.get("RAY_ADDRESS"), num_cpus=None, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        cmds = [augment_command(a, os.path.join(tmp, f"shard-{k}.jsonl"), f"{k}/{a.shards}") for k in range(a.shards)]
        parts = ray.get([augment_shard.remote(c) for c in cmds])
        with open(a.output, "wb") as f:
            for part in parts:
                f.write(part)
        records = sum(len([l for l in part.splitlines() if l.strip()]) for part in parts)
        print(f"hsa_augment_sharded: {a.shards} shards, {records} records -> {a.output}")
        if a.verify:
            single = os.path.join(tmp, "single.jsonl")
            subprocess.run(augment_command(a, single), check=True, capture_output=True)
            with open(single, "rb") as f:
                want = sorted_by_id(f.read())
            got = sorted_by_id(b"".join(parts))
            if got != want:
                sys.exit(f"hsa_augment_sharded: MISMATCH: sharded {len(got)} lines, single {len(want)}")
            print(f"hsa_augment_sharded: identical to the single-process run ({len(want)} lines, sorted by id)")


if __name__ == "__main__":
    main()
