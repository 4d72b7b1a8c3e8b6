#!/usr/bin/env python3
"""Widen a Qwen3.5-MoE checkpoint's residual stream (hidden_size H -> W) so that the wider model computes
exactly what the narrow one did: the new residual dimensions start at zero and every weight that writes
into them is zero (embeddings, o_proj, out_proj, down_proj), so they stay zero; every weight that reads
from them (q/k/v, in_proj_*, gate/up, router, lm_head) gets small random columns, which see zeros at
first but give the new dimensions a gradient; and every hidden-size RMSNorm's scale is divided by
sqrt(W / H), since the mean square now runs over W dimensions of which W - H are zero (Qwen3.5's norms
scale by 1 + w). Only `hidden_size` changes: heads, head dims, experts and the vocabulary stay.
The test of the twenty-third session's hypothesis (docs/learning-default.md): is the 64-wide residual
what keeps the model from selecting a name it must copy?
    widen.py CHECKPOINT_DIR OUT_DIR WIDTH SEED"""
import json, os, shutil, struct, sys
import numpy as np

src, out, width, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
config = json.load(open(f"{src}/config.json"))
h = config["hidden_size"]
assert width > h, "the new width must exceed the old"
assert config["model_type"] == "qwen3_5_moe_text", "the norm rule below is Qwen3.5's (1 + w)"

def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        assert meta["dtype"] == "F32", (name, meta["dtype"])
        a, b = meta["data_offsets"]
        tensors[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(meta["shape"]).copy()
    return tensors, header.get("__metadata__")

def save(path, tensors, metadata):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data); blobs.append(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

def grow(a, axis, fill):
    """`a` with `axis` grown from h to width, the new slots from `fill(shape)`."""
    shape = list(a.shape); shape[axis] = width - h
    return np.concatenate([a, fill(shape).astype(np.float32)], axis=axis)

zeros = np.zeros
def small(shape):
    return rng.normal(0.0, config["initializer_range"], shape)

HIDDEN_NORMS = ("input_layernorm.weight", "post_attention_layernorm.weight", "model.norm.weight", "mtp.norm.weight",
                "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight")
WRITERS = ("o_proj.weight", "out_proj.weight", "down_proj.weight", "mtp.fc.weight")
READERS = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "in_proj_qkv.weight", "in_proj_z.weight", "in_proj_a.weight",
           "in_proj_b.weight", "gate_proj.weight", "up_proj.weight", "mlp.gate.weight", "shared_expert_gate.weight", "lm_head.weight")
tensors, metadata = load(f"{src}/model.safetensors")
scale = np.sqrt(width / h)
for name, a in tensors.items():
    if name.endswith(HIDDEN_NORMS):
        assert a.shape == (h,), name
        tensors[name] = grow((1.0 + a) / scale - 1.0, 0, lambda s: np.full(s, 1.0 / scale - 1.0))
    elif name == "model.embed_tokens.weight":
        tensors[name] = grow(a, 1, zeros)
    elif name == "mtp.fc.weight":
        # [h, 2h] over concat(norm(embedding), norm(hidden)): rows write (zero), each half's columns read
        a = grow(a, 0, zeros)
        tensors[name] = np.concatenate([grow(a[:, :h], 1, small), grow(a[:, h:], 1, small)], axis=1)
    elif name.endswith(WRITERS):
        assert a.shape[0] == h, name
        tensors[name] = grow(a, 0, zeros)
    elif name.endswith(READERS):
        assert a.shape[1] == h, name
        tensors[name] = grow(a, 1, small)
    else:
        assert h not in a.shape, f"{name} {a.shape}: which axis is hidden?"
os.makedirs(out, exist_ok=True)
save(f"{out}/model.safetensors", tensors, metadata)
config["hidden_size"] = width
json.dump(config, open(f"{out}/config.json", "w"), indent=2)
for f in ("tokenizer.json", "tokenizer_config.json"):
    if os.path.exists(f"{src}/{f}"):
        shutil.copy(f"{src}/{f}", out)
print(f"{src} -> {out}: hidden_size {h} -> {width}, {len(tensors)} tensors")
