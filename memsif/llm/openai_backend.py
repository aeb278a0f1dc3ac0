"""OpenAI-compatible HTTP back-end (vLLM, TGI, llama.cpp server, Ollama, OpenAI).

Yes/no decisions ask for one token with ``logprobs`` and compare the answer tokens' probabilities.
Constrained JSON asks for OpenAI's ``{"type": "json_schema"}`` response format; a server that
refuses it (llama-cpp-python's ``llama_cpp.server`` knows only ``{"type": "json_object", "schema": …}``)
is asked in that form from then on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import httpx

from memsif.config import MemSIFConfig
from memsif.errors import LLMError, LLMOutputError
from memsif.llm.base import NO_WORDS, YES_WORDS, Generation, Runtime, chat_messages, label_shares
from memsif.prompts import Prompt


class _Refused(LLMError):
    """The server answered a request with an HTTP error status (``status``)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status

    def of_response_format(self) -> bool:
        """Whether the refusal is about the request's response format: a 400 or 422 (a validation
        error), or a 500 whose text names it (llama_cpp.server answers 500 with its validation error)."""
        said = str(self).lower()
        return self.status in (400, 422) or (self.status == 500 and ("json_object" in said
                                                                     or "response_format" in said))


#: Response formats for constrained JSON, tried in this order: OpenAI's (vLLM, TGI, Ollama, OpenAI),
#: then the JSON mode with a schema of llama-cpp-python's server (and Anyscale).
JSON_FORMATS = ("json_schema", "json_object")


def _response_format(form: str, schema: dict[str, Any]) -> dict[str, Any]:
    if form == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}
    return {"type": "json_object", "schema": schema}


class OpenAICompatibleLLM:
    """Chat completions at ``base_url`` (e.g. ``http://localhost:8000/v1``) with model ``model``."""

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_s: float = 120.0,
                 client: httpx.Client | None = None) -> None:
        self.name = model
        self.runtime = Runtime("openai", base_url)
        self.context_window = 32768  # the paper's budget (App. C.2); servers may allow more
        self._url = base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(timeout=timeout_s, headers=headers)
        self._tokenizer = None
        self.json_format = JSON_FORMATS[0]  # the form this server takes (switched on its first refusal)

    @classmethod
    def from_config(cls, config: MemSIFConfig) -> OpenAICompatibleLLM:
        return cls(config.model.llm_base_url, config.model.llm_model, config.model.llm_api_key)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._client.post(self._url, json=body)
            response.raise_for_status()
            return cast(dict[str, Any], response.json())
        except httpx.HTTPStatusError as exc:
            raise _Refused(f"{self._url} answered {exc.response.status_code}: {exc.response.text[:300]}",
                           exc.response.status_code) from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise LLMError(f"Could not reach the model server at {self._url} ({exc}); "
                           "check MEMSIF_LLM_BASE_URL and that the server is running.") from exc

    def _top_logprobs(self, prompt: Prompt, needed_for: str) -> tuple[list[dict[str, Any]], str]:
        """The server's top candidates for the first answer token, and the words that name them in an error.

        Raises:
            LLMOutputError: the server returned no logprobs (``needed_for``: what the message says they are for).
        """
        data = self._post({"model": self.name, "messages": chat_messages(prompt), "max_tokens": 1,
                           "temperature": 0.0, "logprobs": True, "top_logprobs": 20})
        try:
            top: list[dict[str, Any]] = data["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMOutputError(f"{self._url} returned no logprobs; the server must support "
                                 f"'logprobs'{needed_for}.") from exc
        return top, f" among its top tokens: {[t['token'] for t in top][:8]}"

    def yes_probability(self, prompts: Sequence[Prompt]) -> list[float]:
        out = []
        for prompt in prompts:
            top, seen = self._top_logprobs(prompt, " for scored decisions")
            masses = [sum(math.exp(t["logprob"]) for t in top if t["token"].strip() in words)
                      for words in (YES_WORDS, NO_WORDS)]
            out.append(label_shares(masses, ("yes", "no"), self.name, seen)[0])
        return out

    def choice_probabilities(self, prompt: Prompt, labels: Sequence[str]) -> list[float]:
        top, seen = self._top_logprobs(prompt, "")
        values = [sum(math.exp(t["logprob"]) for t in top if t["token"].strip() == label) for label in labels]
        return label_shares(values, labels, self.name, seen)

    def generate(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                 json_schema: dict[str, Any] | None = None, stop: Sequence[str] = ()) -> Generation:
        body: dict[str, Any] = {"model": self.name, "messages": chat_messages(prompt),
                                "max_tokens": max_new_tokens, "temperature": temperature}
        if stop:
            body["stop"] = list(stop)
        if json_schema is not None:
            body["response_format"] = _response_format(self.json_format, json_schema)
        try:
            data = self._post(body)
        except _Refused as exc:  # a server that does not take this response format: the next form, once
            later = JSON_FORMATS[JSON_FORMATS.index(self.json_format) + 1:]
            if json_schema is None or not exc.of_response_format() or not later:
                raise
            self.json_format = later[0]
            body["response_format"] = _response_format(self.json_format, json_schema)
            data = self._post(body)
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMOutputError(f"{self._url} returned no message content: {str(data)[:300]}") from exc
        usage = data.get("usage") or {}
        return Generation(text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))

    def count_tokens(self, text: str) -> int:
        """Approximate: the server's tokenizer is not reachable; ~4 characters a token."""
        return max(1, math.ceil(len(text) / 4))
