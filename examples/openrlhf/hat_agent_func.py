"""OpenRLHF agent for HAT live-room episodes through the environment service
(`--train.agent_func_path examples/openrlhf/hat_agent_func.py`).

OpenRLHF's multi-turn executor owns the tokens: it tokenizes the observation `reset` returns (the
service's `prompt_text`), generates, hands `step` the action text and appends the tokens of the
`environment_feedback` it gets back (the service's `feedback_text`), with the action spans as the loss
mask. The reward arrives on the last step (the judge's scalar; the dimensions in `extra_logs`).

Each prompt's label (`--data.label_key`) is the reset request as JSON, or a bare task record; the
prompt text itself is not used (the service renders the harness's prompt). Set HAT_ENV_URL.
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hat_env_client import HatEnvClient, reset_request  # noqa: E402
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor  # noqa: E402

try:  # OpenRLHF reads rewards with `.item()`; torch is there in a real run.
    import torch

    def _scalar(x):
        return torch.tensor(float(x))

except ImportError:  # the adapter test runs without torch

    class _Scalar(float):
        def item(self):
            return float(self)

    def _scalar(x):
        return _Scalar(x)


class AgentInstance(AgentInstanceBase):
    def __init__(self, *args, **kwargs):
        self.env = HatEnvClient()
        self.session = None

    async def reset(self, states: dict, **kwargs):
        start = await asyncio.to_thread(self.env.reset, reset_request(states["label"]))
        self.session = start["session_id"]
        return {"observation": start["prompt_text"]}

    async def step(self, states: dict, **kwargs):
        result = await asyncio.to_thread(self.env.step, self.session, text=states["action_text"])
        done = result["done"]
        dims = result.get("rewards") or {}
        return {
            "rewards": _scalar(result.get("reward", 0.0) if done else 0.0),
            "scores": _scalar(result.get("score", 0.0) if done else 0.0),
            "environment_feedback": result["feedback_text"],
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": {k: _scalar(0.0 if v is None else v) for k, v in dims.items()},
        }


class AgentExecutor(MultiTurnAgentExecutor):
    def __init__(self):
        super().__init__(AgentInstance)
