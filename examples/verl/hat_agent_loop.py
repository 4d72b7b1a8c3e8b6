"""verl agent loop that plays HAT live-room episodes through the environment service.

Token-in-token-out, as verl requires: the prompt is the service's `prompt_text` tokenized once; each
turn the model's own token ids are kept (mask 1, with their log-probs) and the service's
`feedback_text` — tool results, hook feedback and the next generation prompt — is tokenized and
appended (mask 0, log-prob 0). Nothing is re-rendered. The episode's rewards come back from the
service at the end: `reward_score` is the scalar, `extra_fields["reward_extra_info"]` the dimensions
(GDPO: `gdpo_reward_keys`). The env session id is the request id, so the server manager keeps an
episode on one server (prefix-cache reuse).

Use: put this directory and examples/ on PYTHONPATH, point HAT_ENV_URL at `hat sim serve`, and
select it with the dataset column `agent_name: hat_live_room` (see agent_loop.yaml, run_grpo.sh).
Each row's `extra_info.hat_reset` is the reset request (JSON), e.g. {"task_id": "...", "seed": 0}.
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hat_env_client import HatEnvClient, reset_request  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopBase,
    AgentLoopOutput,
    register,
)

END_OF_TURN = "<|im_end|>"


def _token_ids(output):
    """verl's server manager returns a TokenOutput (token_ids, log_probs) in current versions and a
    bare list of ids in older ones."""
    if hasattr(output, "token_ids"):
        return list(output.token_ids), getattr(output, "log_probs", None)
    return list(output), None


@register("hat_live_room")
class HatAgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        rollout = self.config.actor_rollout_ref.rollout
        self.response_length = rollout.response_length
        self.env = HatEnvClient()
        self.eos_id = self.tokenizer.convert_tokens_to_ids(END_OF_TURN)

    def _encode(self, text):
        return self.tokenizer.encode(text, add_special_tokens=False)

    async def run(self, sampling_params, **kwargs):
        extra = kwargs.get("extra_info") or {}
        request = reset_request(extra.get("hat_reset", kwargs.get("hat_reset")))
        start = await asyncio.to_thread(self.env.reset, request)
        session = start["session_id"]
        prompt_ids = self._encode(start["prompt_text"])
        response_ids, mask, logprobs = [], [], []
        turns, final = 0, start if start.get("done") else None
        while final is None:
            budget = self.response_length - len(response_ids)
            if budget <= 0:
                final = await asyncio.to_thread(self.env.close, session)
                break
            params = dict(sampling_params)
            params["max_tokens"] = min(budget, params.get("max_tokens", budget))
            output = await self.server_manager.generate(
                request_id=session, prompt_ids=prompt_ids + response_ids, sampling_params=params
            )
            ids, lps = _token_ids(output)
            response_ids += ids
            mask += [1] * len(ids)
            logprobs += list(lps) if lps else [0.0] * len(ids)
            turns += 1
            # The model's own tokens go to the service as text; the service parses tool calls in the
            # harness's format, so a malformed call comes back as feedback the model can learn from.
            step = await asyncio.to_thread(
                self.env.step, session, text=self.tokenizer.decode(ids, skip_special_tokens=False)
            )
            if step["done"]:
                final = step
                break
            feedback = self._encode(step["feedback_text"])
            if not ids or ids[-1] != self.eos_id:
                # Stopped on the length limit: close the turn ourselves (not the model's token).
                feedback = [self.eos_id] + feedback
            response_ids += feedback
            mask += [0] * len(feedback)
            logprobs += [0.0] * len(feedback)
            turns += 1
        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[:n],
            response_mask=mask[:n],
            response_logprobs=logprobs[:n],
            reward_score=final.get("reward", 0.0),
            num_turns=turns,
            metrics={},
            extra_fields={
                "reward_extra_info": {k: (v if v is not None else 0.0) for k, v in (final.get("rewards") or {}).items()},
                # For hat_reward.compute_score under GDPO: the episode's own rewards, judged already.
                "hat_rewards": {"reward": final.get("reward", 0.0), "rewards": final.get("rewards") or {},
                                "success": final.get("success")},
                "hat_episode_id": final.get("id"),
                "hat_success": final.get("success"),
                "hat_stop_reason": final.get("stop_reason"),
            },
        )
