"""verl custom reward function backed by HAT's reward service (`judge serve`).

`custom_reward_function.path=examples/verl/hat_reward.py custom_reward_function.name=compute_score`.
`ground_truth` is the row's HAT record (a task record, JSON) and `solution_str` the decoded response;
the result is a dict, so verl keeps every dimension in `reward_extra_info` next to `score` — what
GDPO (`algorithm.adv_estimator=gdpo`, `gdpo_reward_keys`) normalises one by one. With the agent loop
(hat_agent_loop.py) the environment service has already judged the episode and this function is
not needed.
"""

import json
import os
import urllib.request

URL = os.environ.get("HAT_JUDGE_URL", "http://127.0.0.1:8200").rstrip("/")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    judged = (extra_info or {}).get("hat_rewards")
    if judged:
        # The agent loop's episode, judged by the environment service already.
        return _as_dict(judged)
    body = json.dumps({"items": [{"label": ground_truth, "response": solution_str}]}).encode()
    req = urllib.request.Request(URL + "/score", data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    key = os.environ.get("HAT_API_KEY")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=60) as r:
        result = json.loads(r.read())["results"][0]
    return _as_dict(result)


def _as_dict(result):
    out = {"score": result["reward"]}
    for name, value in result["rewards"].items():
        # verl stacks extra info into arrays: an unobservable dimension is 0 here, null in the service.
        out[name] = 0.0 if value is None else value
    out["success"] = 1.0 if result["success"] else 0.0
    return out
