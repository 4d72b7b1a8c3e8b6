#!/usr/bin/env python3
"""The verl and OpenRLHF adapters (examples/verl, examples/openrlhf) driven the way their engines
drive them, against live services (`hat sim serve`, `judge serve`) started here on free loopback
ports. CI cannot install verl or OpenRLHF (torch, ray, vllm), so this file defines stand-ins of the
engine classes the adapters import, with the same signatures and call order; only the model's
generation is stubbed: the scripted teacher's next move, fetched from the service's /oracle endpoint
and tokenized, as if a model had sampled those tokens.

Checks: the verl loop's token bookkeeping (mask 1 exactly on generated tokens, log-probs aligned,
prompt + response decoding to the conversation), the same rewards per dimension as `hat sim rollout`
+ `judge score` for the same policy, tasks, faults and seed; the OpenRLHF agent under a multi-turn
executor; the verl reward function and OpenRLHF's remote reward protocol against `judge serve`.

Run: make adapters-test (builds the binaries first). Standard library only.
"""

import abc
import asyncio
import faulthandler
import json
import os
import re
import subprocess
import sys
import tempfile
import types

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("HAT_BIN_DIR", os.path.join(ROOT, "target", "debug"))
HARNESS = os.path.join(ROOT, "harness-samples", "taolive")
FAULTS = "timeout=0.2,malformed=0.1"
SEED = "3"
N_TASKS = 6


# --- stand-ins of the engines' classes (signatures as in verl and OpenRLHF) ---------------------


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def install_verl():
    registry = {}

    def register(name):
        def wrap(cls):
            registry[name] = cls
            return cls

        return wrap

    class AgentLoopBase(abc.ABC):
        def __init__(self, trainer_config, server_manager, tokenizer, processor, **kwargs):
            self.config = trainer_config.config
            self.server_manager = server_manager
            self.tokenizer = tokenizer
            self.processor = processor
            self.loop = asyncio.get_running_loop()

        @abc.abstractmethod
        async def run(self, sampling_params, **kwargs):
            raise NotImplementedError

    class AgentLoopOutput:
        REQUIRED = ("prompt_ids", "response_ids", "response_mask", "num_turns", "metrics")

        def __init__(self, **fields):
            missing = [f for f in self.REQUIRED if f not in fields]
            assert not missing, f"AgentLoopOutput without {missing}"
            for k in ("prompt_ids", "response_ids", "response_mask"):
                assert all(isinstance(x, int) for x in fields[k]), k
            self.response_logprobs = None
            self.reward_score = None
            self.extra_fields = {}
            self.__dict__.update(fields)

    for name in ("verl", "verl.experimental", "verl.experimental.agent_loop"):
        module(name)
    module(
        "verl.experimental.agent_loop.agent_loop",
        AgentLoopBase=AgentLoopBase,
        AgentLoopOutput=AgentLoopOutput,
        register=register,
    )
    return registry


def install_openrlhf():
    class AgentExecutorBase(abc.ABC):
        @abc.abstractmethod
        async def execute(self, prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine):
            raise NotImplementedError

    class AgentInstanceBase(abc.ABC):
        @abc.abstractmethod
        def __init__(self, *args, **kwargs):
            pass

        async def reset(self, states, **kwargs):
            return states

        @abc.abstractmethod
        async def step(self, state_dict, **kwargs):
            raise NotImplementedError

    class MultiTurnAgentExecutor(AgentExecutorBase):
        """The contract of OpenRLHF's multi-turn executor: one instance per prompt; reset with the
        prompt and label; generate on the running token list; step with the action text; append the
        action tokens and the feedback's tokens; sum the step rewards; stop when done."""

        def __init__(self, agent_instance_cls):
            assert issubclass(agent_instance_cls, AgentInstanceBase)
            self.agent_instance_cls = agent_instance_cls

        async def execute(self, prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine):
            agent = self.agent_instance_cls()
            llm_engine.attach(agent)  # the generation stub needs the episode (see OracleEngine)
            first = await agent.reset({"observation": prompt, "label": label})
            observation = first["observation"]
            tokens = hf_tokenizer(observation, add_special_tokens=False)["input_ids"][0]
            ranges, total, scores, logs = [], 0.0, 0.0, {}
            while True:
                sampling_params.max_tokens = max_length - len(tokens)
                if sampling_params.max_tokens <= 0:
                    break
                out = (await llm_engine.generate(tokens, sampling_params)).outputs[0]
                ranges.append((len(tokens), len(tokens) + len(out.token_ids)))
                result = await agent.step(
                    {
                        "observation_text": observation,
                        "action_text": out.text,
                        "label": label,
                        "sampling_params": sampling_params,
                    }
                )
                total += result["rewards"].item()
                scores = result.get("scores", total)
                logs = result.get("extra_logs", {})
                feedback = result["environment_feedback"]
                observation = observation + out.text + feedback
                tokens = tokens + list(out.token_ids) + hf_tokenizer(feedback, add_special_tokens=False)["input_ids"][0]
                if result["done"]:
                    break
            return {"reward": total, "scores": scores, "observation_tokens": tokens,
                    "action_ranges": ranges, "extra_logs": logs}

    for name in ("openrlhf", "openrlhf.utils"):
        module(name)
    module(
        "openrlhf.utils.agent",
        AgentExecutorBase=AgentExecutorBase,
        AgentInstanceBase=AgentInstanceBase,
        MultiTurnAgentExecutor=MultiTurnAgentExecutor,
    )


class ByteTokenizer:
    """A byte-level tokenizer with the Qwen chat markers as single tokens: enough of an HF tokenizer
    for the adapters (encode, decode, __call__, convert_tokens_to_ids)."""

    SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
    SPLIT = re.compile("(" + "|".join(re.escape(s) for s in SPECIALS) + ")")

    def encode(self, text, add_special_tokens=False):
        ids = []
        for part in self.SPLIT.split(text):
            if part in self.SPECIALS:
                ids.append(256 + self.SPECIALS.index(part))
            else:
                ids.extend(part.encode("utf-8"))
        return ids

    def decode(self, ids, skip_special_tokens=False):
        out, buf = [], bytearray()
        for i in ids:
            if i >= 256:
                out.append(buf.decode("utf-8"))
                buf = bytearray()
                if not skip_special_tokens:
                    out.append(self.SPECIALS[i - 256])
            else:
                buf.append(i)
        out.append(buf.decode("utf-8"))
        return "".join(out)

    def convert_tokens_to_ids(self, token):
        return 256 + self.SPECIALS.index(token)

    def __call__(self, text, add_special_tokens=False, return_tensors=None):
        return {"input_ids": [self.encode(text)]}


class OracleServerManager:
    """verl's server manager with generation stubbed: the scripted teacher's move for the episode
    (the adapter uses the env session id as the request id), tokenized."""

    def __init__(self, env, tokenizer):
        self.env, self.tok, self.generated = env, tokenizer, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        move = await asyncio.to_thread(self.env.oracle, request_id)
        ids = self.tok.encode(move["text"])
        self.generated.append(ids)
        return types.SimpleNamespace(token_ids=ids, log_probs=[-0.25] * len(ids))


class OracleEngine:
    """OpenRLHF's vLLM engine with generation stubbed: vLLM-shaped output (token ids end with the
    end-of-turn id; the text leaves it out, as vLLM's does)."""

    def __init__(self, env, tokenizer):
        self.env, self.tok, self.agent = env, tokenizer, None

    def attach(self, agent):
        self.agent = agent

    async def generate(self, prompt_tokens, sampling_params):
        move = await asyncio.to_thread(self.env.oracle, self.agent.session)
        text = move["text"]
        ids = self.tok.encode(text)
        visible = text[: -len("<|im_end|>")] if text.endswith("<|im_end|>") else text
        return types.SimpleNamespace(outputs=[types.SimpleNamespace(token_ids=ids, text=visible)])


# --- services --------------------------------------------------------------------------------------


def start(argv):
    """A service on a free port; its address from the banner it prints once listening."""
    proc = subprocess.Popen(argv + ["--port", "0"], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"on http://(\S+)", line)
    assert m, f"{argv[0]} did not start: {line}{proc.stderr.read() if proc.poll() is not None else ''}"
    return proc, "http://" + m.group(1)


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def expected_rewards(scores):
    """The services' scalar from the judge's scores (docs/services.md): mean of the observed
    dimensions among the first four, plus the chain-of-thought term."""
    dims = ["accuracy", "effectiveness", "tool_rationality", "skill_selection"]
    observed = [scores[d] for d in dims if scores.get(d) is not None]
    score = sum(observed) / len(observed) if observed else 0.0
    return score + scores.get("cot_length", 0.0)


def main():
    # A hung service call fails the run with every thread's stack instead of hanging CI.
    faulthandler.dump_traceback_later(float(os.environ.get("ADAPTERS_TEST_TIMEOUT_S", "240")), exit=True)
    registry = install_verl()
    install_openrlhf()
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    sys.path.insert(0, os.path.join(ROOT, "examples", "verl"))
    sys.path.insert(0, os.path.join(ROOT, "examples", "openrlhf"))

    tmp = tempfile.mkdtemp(prefix="hat-adapters-")
    tasks = os.path.join(tmp, "tasks.jsonl")
    run([f"{BIN}/hat", "sim", "tasks", "--harness", HARNESS, "--n", str(N_TASKS), "--seed", "5", "-o", tasks])
    # The reference: the same oracle, tasks, faults and seed in process, then the judge.
    rolled = os.path.join(tmp, "rollout.jsonl")
    scored = os.path.join(tmp, "scored.jsonl")
    run([f"{BIN}/hat", "sim", "rollout", "--harness", HARNESS, "--tasks", tasks, "--faults", FAULTS,
         "--seed", SEED, "--policy", "oracle", "-o", rolled])
    run([f"{BIN}/judge", "score", "-i", rolled, "-o", scored])
    reference = {}
    with open(scored) as f:
        for line in f:
            r = json.loads(line)
            reference[r["id"]] = r["scores"]

    env_proc, env_url = start([f"{BIN}/hat", "sim", "serve", "--harness", HARNESS, "--tasks", tasks,
                               "--faults", FAULTS, "--seed", SEED, "--oracle",
                               "--out", os.path.join(tmp, "episodes.jsonl")])
    judge_proc, judge_url = start([f"{BIN}/judge", "serve"])
    os.environ["HAT_ENV_URL"] = env_url
    os.environ["HAT_JUDGE_URL"] = judge_url
    try:
        import hat_agent_loop  # noqa: F401  (registers the loop)
        import hat_agent_func
        import hat_reward
        from hat_env_client import HatEnvClient

        env = HatEnvClient(env_url)
        tok = ByteTokenizer()
        config = types.SimpleNamespace(
            actor_rollout_ref=types.SimpleNamespace(rollout=types.SimpleNamespace(response_length=8192))
        )
        loop_cls = registry["hat_live_room"]

        async def verl_episodes():
            outs = []
            for task_id in reference:
                manager = OracleServerManager(env, tok)
                loop = loop_cls(types.SimpleNamespace(config=config), manager, tok, None)
                row = {"agent_name": "hat_live_room", "raw_prompt": [],
                       "extra_info": {"hat_reset": json.dumps({"task_id": task_id})}}
                out = await loop.run({"temperature": 1.0, "top_p": 1.0}, **row)
                outs.append((task_id, out, manager.generated))
            return outs

        checked = 0
        for task_id, out, generated in asyncio.run(verl_episodes()):
            # Mask 1 exactly on the generated tokens, in order; log-probs aligned with the response.
            ones = [t for t, m in zip(out.response_ids, out.response_mask) if m == 1]
            assert ones == [t for g in generated for t in g], task_id
            assert len(out.response_logprobs) == len(out.response_ids) == len(out.response_mask)
            assert all(lp == -0.25 for lp, m in zip(out.response_logprobs, out.response_mask) if m == 1)
            assert all(lp == 0.0 for lp, m in zip(out.response_logprobs, out.response_mask) if m == 0)
            text = tok.decode(out.prompt_ids + out.response_ids)
            assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_end|>"), text[-200:]
            # The same rewards as the same policy played by `hat sim rollout`, judged by `judge score`.
            want = reference[task_id]
            got = out.extra_fields["reward_extra_info"]
            for dim in ("accuracy", "effectiveness", "tool_rationality", "skill_selection", "cot_length"):
                assert abs(got[dim] - (want.get(dim) or 0.0)) < 1e-9, (task_id, dim, got, want)
            assert abs(out.reward_score - expected_rewards(want)) < 1e-9, (task_id, out.reward_score, want)
            checked += 1
        print(f"verl adapter: {checked} episodes, token masks checked, rewards equal to hat sim rollout + judge score")

        async def openrlhf_episodes():
            executor = hat_agent_func.AgentExecutor()
            results = []
            for task_id in reference:
                params = types.SimpleNamespace(max_tokens=512, logprobs=None)
                res = await executor.execute("unused prompt", json.dumps({"task_id": task_id}), params,
                                             1 << 20, tok, OracleEngine(env, tok))
                results.append((task_id, res))
            return results

        for task_id, res in asyncio.run(openrlhf_episodes()):
            assert abs(res["reward"] - expected_rewards(reference[task_id])) < 1e-9, (task_id, res["reward"])
            for a, b in res["action_ranges"]:
                assert tok.decode(res["observation_tokens"][a:b]).endswith("<|im_end|>")
        print(f"openrlhf adapter: {len(reference)} episodes, rewards equal to hat sim rollout + judge score")

        # The verl reward function and OpenRLHF's remote reward protocol against `judge serve`.
        with open(tasks) as f:
            task = f.readline().strip()
        out = hat_reward.compute_score("hat", "在的宝宝～有什么想了解的尽管问！", task)
        assert set(out) >= {"score", "accuracy", "effectiveness", "tool_rationality", "skill_selection",
                            "cot_length", "success"}, out
        import urllib.request

        payload = {"query": ["PROMPT在的宝宝～", "PROMPT<think>\n</think>\n\n欢迎！"],
                   "prompts": ["PROMPT", "PROMPT"], "labels": [task, task]}
        req = urllib.request.Request(judge_url + "/reward", data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            body = json.loads(r.read())
        assert len(body["rewards"]) == 2 and len(body["scores"]) == 2, body
        assert set(body["extra_logs"]) >= {"accuracy", "success"}, body
        print("reward function and OpenRLHF remote reward: ok")
        with open(os.path.join(tmp, "episodes.jsonl")) as f:
            written = sum(1 for _ in f)
        assert written == 2 * len(reference), written
    finally:
        for p in (env_proc, judge_proc):
            p.terminate()
            p.wait(timeout=10)
    print("adapters-test: ok")


if __name__ == "__main__":
    main()
