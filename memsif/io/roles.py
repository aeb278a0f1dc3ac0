"""Which messages of a transcript are the conversation: what a person (the user) or the assistant
said. System and developer prompts, tool calls and tool or function output are left out by every
loader, and so is a model's reasoning (``<think>…</think>`` blocks in a message's text, reasoning or
thinking parts and fields); the load warns how many of each.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

#: Roles whose messages are not the conversation, and what the load warning calls each
#: (``ipython``: the tool-result role of Llama chat templates).
NOT_CONVERSATION = {"system": "system prompt", "developer": "developer prompt", "tool": "tool result",
                    "function": "function result", "ipython": "tool result"}
TOOL_CALL = "tool call"
#: Content parts that are a tool call or its output (Anthropic ``tool_use``/``tool_result``, OpenAI
#: Responses ``function_call``/``function_call_output``).
_TOOL_PARTS = {"tool_use": TOOL_CALL, "function_call": TOOL_CALL, "tool_result": "tool result",
               "function_call_output": "function result"}


def left_out_as(role: Any) -> str | None:
    """What a message of ``role`` (a role, or a speaker name where the format has no roles) is when it
    is not the conversation ("system prompt", "tool result", …); None for a person or the assistant."""
    return NOT_CONVERSATION.get(role.strip().casefold()) if isinstance(role, str) else None


def tool_call_in(message: dict[str, Any]) -> str | None:
    """"tool call" (or "tool result") when a message without text is a tool call (``tool_calls``,
    ``function_call``) or holds only tool parts in its ``content``; None otherwise."""
    if message.get("tool_calls") or message.get("function_call"):
        return TOOL_CALL
    content = message.get("content")
    parts = [p.get("type") for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    return next((_TOOL_PARTS[t] for t in parts if t in _TOOL_PARTS), None)


def left_out_warning(kinds: Counter[str]) -> list[str]:
    """"left out 3 messages that were not conversation: 1 developer prompt, 2 tool results" (or none)."""
    n = sum(kinds.values())
    if not n:
        return []
    each = ", ".join(f"{k} {kind}{'s' if k != 1 else ''}" for kind, k in kinds.items())
    return [f"left out {n} message{'s that were' if n != 1 else ' that was'} not conversation: {each}"]


#: Content-part types and message fields that hold a model's reasoning, not what it said (OpenAI Responses
#: ``reasoning``, Anthropic ``thinking``/``redacted_thinking``, DeepSeek-style ``reasoning_content``).
REASONING_PARTS = frozenset({"reasoning", "thinking", "redacted_thinking"})
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>\s*", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<(?:think|thinking|reasoning)>.*\Z", re.DOTALL | re.IGNORECASE)
_CLOSE_ONLY = re.compile(r"\A.*?</(?:think|thinking|reasoning)>\s*", re.DOTALL | re.IGNORECASE)


def without_reasoning(text: str) -> tuple[str, int]:
    """``text`` without the model's reasoning blocks, and how many there were: ``<think>…</think>`` (also
    ``<thinking>``, ``<reasoning>``), one left open at the end (a reply cut off while thinking), and the
    part before a lone closing tag (chat templates that open the block in the prompt)."""
    text, n = _THINK.subn("", text)
    if _OPEN_THINK.search(text):
        text, n = _OPEN_THINK.sub("", text), n + 1
    elif not n and _CLOSE_ONLY.match(text):
        text, n = _CLOSE_ONLY.sub("", text, count=1), 1
    return text.strip() if n else text, n


def reasoning_in(message: dict[str, Any]) -> int:
    """How many reasoning parts (``REASONING_PARTS``) and non-empty reasoning fields (``REASONING_FIELDS``)
    a message of an OpenAI list, a JSONL line or a Claude message holds."""
    content = message.get("content")
    parts = sum(1 for p in content if isinstance(p, dict) and p.get("type") in REASONING_PARTS) \
        if isinstance(content, list) else 0
    return parts + sum(1 for f in REASONING_FIELDS if message.get(f))


def reasoning_warning(n: int) -> list[str]:
    """"left out 2 reasoning blocks (the model's thinking, not what it said)" (or none)."""
    if not n:
        return []
    return [f"left out {n} reasoning block{'s' if n != 1 else ''} (the model's thinking, not what it said)"]
