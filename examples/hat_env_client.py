"""A small client of HAT's environment service (`hat sim serve`), shared by the verl and OpenRLHF
adapters. Standard library only, so it runs inside any engine's worker without new dependencies.
Calls are blocking; the adapters run them in a thread (`asyncio.to_thread`) so the engine's event
loop keeps generating for other episodes meanwhile. Protocol: docs/services.md.
"""

import json
import os
import urllib.error
import urllib.request


class HatServiceError(RuntimeError):
    """A 4xx/5xx answer: the status and the service's message."""

    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class HatEnvClient:
    def __init__(self, url=None, api_key=None, timeout=60.0):
        self.url = (url or os.environ.get("HAT_ENV_URL", "http://127.0.0.1:8100")).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("HAT_API_KEY")
        self.timeout = timeout

    def _post(self, path, body):
        data = json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method="POST")
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read())["error"]["message"]
            except Exception:  # the body was not the service's JSON error
                message = str(e)
            raise HatServiceError(e.code, message) from None

    def reset(self, request):
        """Start an episode: `request` is the reset body (task / task_id / task_seed, harness, faults,
        seed). Returns session_id, prompt_text, tools, messages, ..."""
        return self._post("/reset", request)

    def step(self, session_id, text=None, token_ids=None, message=None):
        body = {"session_id": session_id}
        if text is not None:
            body["text"] = text
        if token_ids is not None:
            body["token_ids"] = list(token_ids)
        if message is not None:
            body["message"] = message
        return self._post("/step", body)

    def close(self, session_id):
        """End an episode where it stands (out of token budget); returns its rewards."""
        return self._post("/close", {"session_id": session_id})

    def oracle(self, session_id):
        """The scripted teacher's next move (services started with --oracle; tests only)."""
        return self._post("/oracle", {"session_id": session_id})


def reset_request(value):
    """The reset body a dataset row carries: a JSON string or dict that is either a reset request
    (`task`, `task_id`, `task_seed`, ...) or a bare task record (`hat sim tasks`), which is wrapped."""
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError(f"a HAT reset request must be a JSON object, got {type(value).__name__}")
    if any(k in value for k in ("task", "task_id", "task_seed")):
        return dict(value)
    return {"task": value}
