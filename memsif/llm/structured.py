"""Structured output: JSON that validates against a pydantic response schema.

Two layers: (1) constrained decoding where the back-end allows it — for transformers, the
maintained ``lm-format-enforcer`` library masks every token that would leave the JSON schema, so even
a 135M model emits parseable JSON; OpenAI-compatible servers get ``response_format`` with the schema;
(2) ``parse_json_reply`` on whatever came back: it takes the JSON out of code fences or surrounding
prose and validates it; anything else (empty, truncated, wrong shape) raises ``LLMOutputError``
with the reply quoted, so "no facts" and "broken" never look the same.
"""

from __future__ import annotations

import json
import re
import threading
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from memsif.errors import LLMError, LLMOutputError

if TYPE_CHECKING:
    import numpy as np
    from llguidance import LLTokenizer
    from lmformatenforcer.tokenenforcer import TokenEnforcerTokenizerData
    from transformers import LogitsProcessor, PreTrainedTokenizerBase

T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _first_json_value(text: str) -> str | None:
    """The first balanced {...} or [...] in ``text`` (strings and escapes respected), or None."""
    start = next((i for i, ch in enumerate(text) if ch in "{["), None)
    if start is None:
        return None
    stack: list[str] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return text[start:i + 1]
    return None  # unbalanced: truncated


def parse_json_reply(text: str, schema: type[T]) -> T:
    """Validate an LLM reply against ``schema``, recovering JSON from fences or prose.

    Raises:
        LLMOutputError: the reply is empty, truncated, not JSON, or does not match the schema.
    """
    if not text or not text.strip():
        raise LLMOutputError("the model returned an empty reply where JSON was required")
    for candidate in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        value = _first_json_value(candidate)
        if value is None:
            continue
        try:
            data: Any = json.loads(value)
        except json.JSONDecodeError:
            continue
        if isinstance(data, list) and len(schema.model_fields) == 1:
            data = {next(iter(schema.model_fields)): data}  # a bare list for a one-list schema
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise LLMOutputError(f"the reply does not match {schema.__name__}: {first['msg']} at "
                                 f"{first['loc']}; reply: {text[:300]!r}") from exc
    kind = "truncated JSON" if re.search(r"[{\[]", text) else "no JSON"
    raise LLMOutputError(f"{kind} in the reply: {text[:300]!r}")


class JsonSchemaLogits:
    """Builds transformers logits processors that keep generation inside a JSON schema
    (lm-format-enforcer). The tokenizer's prefix tree is built once per tokenizer (~2 s for 49k tokens)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self._tokenizer = tokenizer
        self._data: TokenEnforcerTokenizerData | None = None
        self._layout_tokens: list[int] = []
        self._lock = threading.Lock()

    def _tokenizer_data(self) -> TokenEnforcerTokenizerData:
        from lmformatenforcer.tokenenforcer import TokenEnforcerTokenizerData

        with self._lock:
            if self._data is None:
                tok = self._tokenizer
                vocab_size = len(tok)
                token_0 = tok.encode("0", add_special_tokens=False)[-1]
                special = set(tok.all_special_ids)
                regular: list[tuple[int, str, bool]] = []
                for idx in range(vocab_size):
                    if idx in special:
                        continue
                    after_0 = cast(str, tok.decode([token_0, idx]))[1:]
                    alone = cast(str, tok.decode([idx]))
                    regular.append((idx, after_0, len(after_0) > len(alone)))
                self._data = TokenEnforcerTokenizerData(
                    regular, lambda tokens: cast(str, tok.decode(tokens)).rstrip("\ufffd"), tok.eos_token_id, False,
                    vocab_size)
                # Tokens of layout whitespace (newlines, tabs, runs of spaces): lm-format-enforcer's
                # whitespace limit does not stop them, and a small model spends its budget on them.
                self._layout_tokens = [idx for idx, text, _ in regular if re.search(r"[\r\n\t]| {2}", text)]
            return self._data

    def processor(self, schema: dict[str, Any], prompt_length: int) -> LogitsProcessor:
        """A ``LogitsProcessor`` for one generation whose prompt has ``prompt_length`` tokens."""
        import torch
        from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser, TokenEnforcer
        from transformers import LogitsProcessor

        # Compact JSON in schema order: small models otherwise spend their token budget on
        # pretty-printing whitespace and truncate.
        config = CharacterLevelParserConfig(max_consecutive_whitespaces=1, force_json_field_order=True)
        enforcer = TokenEnforcer(self._tokenizer_data(), JsonSchemaParser(schema, config=config))
        layout = torch.tensor(self._layout_tokens, dtype=torch.long)
        end = self._tokenizer.eos_token_id

        class _Mask(LogitsProcessor):
            def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
                mask = torch.full_like(scores, float("-inf"))
                for row in range(input_ids.shape[0]):
                    reply = input_ids[row, prompt_length:].tolist()
                    if end in reply:  # a finished row of a batch: it only pads from here
                        mask[row, end] = 0.0
                        continue
                    allowed = torch.tensor(enforcer.get_allowed_tokens(reply).allowed_tokens, dtype=torch.long)
                    compact = allowed[~torch.isin(allowed, layout)]
                    mask[row, compact if len(compact) else allowed] = 0.0  # never leave nothing allowed
                return cast(torch.FloatTensor, scores + mask)

        return _Mask()


def salvage_items(text: str, item_schema: type[T]) -> list[T]:
    """Complete, valid objects of a JSON list in a reply that was cut off (e.g. at the token limit):
    every balanced {...} after the first '[' that validates as ``item_schema``. Empty when none."""
    start = text.find("[")
    items: list[T] = []
    rest = text[start + 1:] if start >= 0 else ""
    while True:
        value = _first_json_value(rest)
        if value is None or not value.startswith("{"):
            return items
        try:
            items.append(item_schema.model_validate(json.loads(value)))
        except (json.JSONDecodeError, ValidationError):
            pass
        rest = rest[rest.find(value) + len(value):]


class JsonMask:
    """Keeps a reply inside a JSON schema with llguidance's token masks (compact JSON with ", " and ": "
    separators, the layout the model writes unprompted). A llama.cpp logits processor when called with
    ``(input_ids, scores)``: it reads the tokens after the first ``n_prompt`` (the prompt's) and masks every
    score that would leave the schema with -inf. A caller that feeds the reply itself uses ``advance``
    (the new tokens), ``apply`` (mask the next token's scores) and ``forced`` (the tokens the grammar
    allows alone from here: written without asking the model).

    Raises:
        LLMError: the schema cannot be compiled into a grammar.
    """

    def __init__(self, tokenizer: LLTokenizer, json_schema: dict[str, Any], n_prompt: int) -> None:
        from llguidance import LLMatcher

        grammar = LLMatcher.grammar_from_json_schema(
            json.dumps(json_schema), defaults={"whitespace_flexible": False, "item_separator": ", ",
                                               "key_separator": ": "})
        self._matcher = LLMatcher(tokenizer, grammar)
        if self._matcher.is_error():
            raise LLMError(f"the JSON schema cannot be compiled into a grammar: {self._matcher.get_error()}")
        self._seen = n_prompt

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if len(input_ids) > self._seen:
            self.advance([int(t) for t in input_ids[self._seen:]])
        return self.apply(scores)

    def advance(self, tokens: list[int]) -> None:
        """The reply's next ``tokens``, in order."""
        self._matcher.consume_tokens(tokens)
        self._seen += len(tokens)

    def apply(self, scores: np.ndarray) -> np.ndarray:
        """``scores`` (n_vocab,) with every token the grammar refuses next set to -inf (in place)."""
        import numpy as np

        allowed = np.unpackbits(np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
        scores[~allowed[:len(scores)].astype(bool)] = -np.inf
        return scores

    def forced(self) -> list[int]:
        """The tokens the grammar forces next (``{"facts": [{"subject": "`` after ``{``), none when the next
        token is a choice; not consumed (``advance`` them once written)."""
        return list(self._matcher.compute_ff_tokens())
