#!/usr/bin/env python3
"""Name-copy rows: can the copy-trained model copy a tool's made-up name from its tool list?
Each row: 4 tools with coined names (one per function, shuffled), the current product's id in the system
prompt, a viewer question that selects one function, and the call: that tool's coined name + the id.
Coined names from disjoint syllable sets for train and held-out rows."""
import json, random, sys
n, seed, split = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
# optional 4th argument (docs/runs/name-order-2026-12-05): the system prompt also lists the tools, one line
# each, `name-first` ("- pale_zirera: 库存 stock…") or `description-first` ("- 库存 stock…: pale_zirera"); a
# causal model can tie a name to its description only where it has read the description first
LISTING = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "none" else None
assert LISTING in (None, "name-first", "description-first")
# optional 5th argument: how many of the four tools a row lists (the asked one always among them); 1
# separates copying a listed name from selecting it
TOOLS = int(sys.argv[5]) if len(sys.argv) > 5 else 4
# optional 6th argument, words joined by "+": `shuffled-names`: every row's four names are the same four
# words, dealt to the functions at random, so only the description tells which is which (selection without
# an unseen name); `quoted-questions`: each description ends by quoting the viewer question it serves, as
# the sample harness's descriptions do ("观众问“几天到”…时调用"), so the question matches it word for word
EXTRA = {w for a in sys.argv[6:] for w in a.split("+")}
# `vocab-names` (docs/runs/select-copy-2026-12-05): each coined word is 1–3 pieces of the tokenizer's
# vocabulary (letters only, 2+ characters), so a copy learnt on these rows covers the pieces any name is
# made of, not one syllable generator's
# `drifted-names` (the same): shuffled-names' four words with each syllable replaced, with a probability
# drawn per row from 0, 1/4, 1/2, 3/4, 1, by a new one, so the rows run from the known names to new ones
# (the row id ends in -q and that probability)
assert EXTRA <= {"shuffled-names", "quoted-questions", "vocab-names", "drifted-names"}, EXTRA
SHUFFLED_NAMES = "shuffled-names" in EXTRA
rng = random.Random(seed)
CONS = "bdfgklmnprstvz"; VOW = "aeiou"
# held-out rows use syllables starting with consonants the train rows never use first
FIRST = {"train": "bdfgklmn", "eval": "prstvz"}[split]
FUNCS = [("商品详情 product detail: price, specs", "这个多少钱"), ("库存 stock: is it in stock", "有货吗"),
         ("优惠 promotions: coupons and deals", "有优惠吗"), ("物流 shipping: delivery time", "几天能到")]
if "quoted-questions" in EXTRA:
    FUNCS = [(d + f" 观众问“{q}”时调用", q) for d, q in FUNCS]
PIECES = sorted(k for k in json.load(open("out/exp-g128/data/tokenizer/tokenizer.json"))["model"]["vocab"]
                if k.isascii() and k.isalpha() and len(k) >= 2) if "vocab-names" in EXTRA else None
def coin():
    if PIECES:
        return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3)))
    return rng.choice(FIRST) + rng.choice(VOW) + "".join(rng.choice(CONS) + rng.choice(VOW) for _ in range(rng.randint(1, 2)))
for i in range(n):
    names = []
    while len(names) < 4:
        w = coin() + "_" + coin()
        if w not in names: names.append(w)
    if SHUFFLED_NAMES or "drifted-names" in EXTRA:
        names = ["bako_dimu", "fela_gino", "kemi_lodo", "mabe_nifa"]; rng.shuffle(names)
    drift = None
    if "drifted-names" in EXTRA:
        drift = rng.choice([0, 0.25, 0.5, 0.75, 1])
        def drifted(word):
            return "_".join("".join(rng.choice(FIRST) + rng.choice(VOW) if rng.random() < drift else half[j:j + 2]
                                    for j in range(0, len(half), 2)) for half in word.split("_"))
        while True:
            new = [drifted(w) for w in names]
            if len(set(new)) == 4:
                names = new; break
    order = list(range(4)); rng.shuffle(order)
    pid = "p%03d" % rng.randrange(1000)
    ask = rng.randrange(4)
    if TOOLS < 4:
        order = [ask] + [j for j in order if j != ask][:TOOLS - 1]; rng.shuffle(order)
    tools = [{"type": "function", "function": {"name": names[j], "description": FUNCS[j][0],
              "parameters": {"type": "object", "properties": {"product_id": {"type": "string"}}, "required": ["product_id"]}}}
             for j in order]
    args = json.dumps({"product_id": pid}, separators=(",", ":"))
    system = f"# 当前讲解商品 Current product\n商品ID product_id={pid}"
    if LISTING:
        pairs = [(names[j], FUNCS[j][0]) for j in order]
        system += "\n# 工具 Tools\n" + "\n".join(f"- {a}: {b}" if LISTING == "name-first" else f"- {b}: {a}" for a, b in pairs)
    print(json.dumps({"id": f"name-{split}-{i:06d}" + (f"-q{drift}" if drift is not None else ""),
        "task": {"intent": "product_qa", "expected": {"tool_calls": [{"tool": names[ask], "args": {"product_id": pid}}]}},
        "tools": tools,
        "messages": [{"role": "system", "content": system},
                     {"role": "user", "content": FUNCS[ask][1]},
                     {"role": "assistant", "tool_calls": [{"id": "call_1_0", "type": "function",
                      "function": {"name": names[ask], "arguments": args}}]}]}, ensure_ascii=False))
