"""Test doubles: a fake LLM keyed by prompt name and a deterministic embedder."""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from memsif.entities import RegexEntityExtractor
from memsif.errors import LLMError
from memsif.llm import Generation
from memsif.llm.profiles import ModelProfile
from memsif.prompts import Prompt


class FakeLLM:
    """Answers yes/no prompts from a table keyed by prompt name and records every call.

    ``answers[name]`` is a probability or a function of the prompt returning one; a missing name
    raises, so a test fails loudly when the engine calls a judge it should not.
    """

    name = "fake-llm"

    def __init__(self, answers: dict[str, float | Callable[[Prompt], float]] | None = None,
                 fail: set[str] | None = None) -> None:
        self.answers = answers or {}
        self.fail = fail or set()
        self.calls: dict[str, list[Prompt]] = defaultdict(list)

    def yes_probability(self, prompts: Sequence[Prompt]) -> list[float]:
        out = []
        for prompt in prompts:
            self.calls[prompt.name].append(prompt)
            if prompt.name in self.fail:
                raise LLMError(f"fake failure for {prompt.name}")
            if prompt.name not in self.answers:
                raise AssertionError(f"unexpected LLM call: {prompt.name}")
            answer = self.answers[prompt.name]
            out.append(float(answer(prompt) if callable(answer) else answer))
        return out

    def choice_probabilities(self, prompt: Prompt, labels: Sequence[str]) -> list[float]:
        """``answers[name]`` is the chosen label, a {label: probability} dict, or a function of the prompt."""
        self.calls[prompt.name].append(prompt)
        if prompt.name in self.fail:
            raise LLMError(f"fake failure for {prompt.name}")
        if prompt.name not in self.answers:
            raise AssertionError(f"unexpected LLM call: {prompt.name}")
        answer = self.answers[prompt.name]
        answer = answer(prompt) if callable(answer) else answer
        if isinstance(answer, str):
            answer = {answer: 1.0}
        return [float(answer.get(label, 0.0)) for label in labels]

    def generate(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                 json_schema: dict | None = None, stop: Sequence[str] = ()) -> Generation:
        self.calls[prompt.name].append(prompt)
        if prompt.name in self.fail:
            raise LLMError(f"fake failure for {prompt.name}")
        answer = self.answers.get(prompt.name, "")
        text = answer(prompt) if callable(answer) else str(answer)
        return Generation(text, len(prompt.text.split()), len(text.split()))

    def count_tokens(self, text: str) -> int:
        """Words and line breaks (a real tokenizer counts a line break as a token too)."""
        return len(text.split()) + text.count("\n")


def grounded_extraction(facts_by_phrase: dict[str, dict]) -> Callable[[Prompt], str]:
    """A fake core_extract reply: for each numbered message line of the prompt holding a phrase, that
    phrase's fact citing that line (the way a good extractor cites its source)."""
    def reply(prompt: Prompt) -> str:
        facts = []
        for line in prompt.text.rsplit("Conversation:\n", 1)[-1].splitlines():  # the batch, not the example
            number = re.match(r"(\d+)\. ", line)
            for phrase, fact in facts_by_phrase.items():
                if number and phrase in line:
                    facts.append({**fact, "sources": [int(number.group(1))]})
        return json.dumps({"facts": facts[:3]})
    return reply


class HashEmbedder:
    """Bag of words hashed into ``dim`` buckets, L2-normalised: same words → same vector."""

    def __init__(self, dim: int = 64, name: str = "hash-embedder") -> None:
        self.dim = dim
        self.name = name

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class FixedEmbedder:
    """Returns preset vectors by text, for hand-computed φ cases."""

    def __init__(self, table: dict[str, Sequence[float]], name: str = "fixed") -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.dim = len(next(iter(self.table.values())))
        self.name = name

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.table[text]


class TableEntities:
    """Entity sets given per text (missing text → empty set)."""

    name = "table"

    def __init__(self, table: dict[str, set[str]] | None = None) -> None:
        self.table = table or {}

    def extract(self, texts: Sequence[str]) -> list[frozenset[str]]:
        return [frozenset(self.table.get(t, set())) for t in texts]

    def asks_for_several(self, question: str) -> bool:
        return RegexEntityExtractor().asks_for_several(question)

    def asked_things(self, question: str) -> list[str] | None:
        return None


class KeywordEmbedder(HashEmbedder):
    """Hashed bag of words plus a strong shared direction for each keyword a text contains, so texts
    about the same keyword are similar (cos ≈ 0.8) without being identical."""

    def __init__(self, keywords: dict[str, int], dim: int = 64) -> None:
        super().__init__(dim=dim, name="keyword-embedder")
        self.keywords = keywords

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = super().embed_documents(texts)
        for i, text in enumerate(texts):
            for word, axis in self.keywords.items():
                if word in text.lower():
                    out[i, axis] += 2.0
            out[i] /= np.linalg.norm(out[i]) or 1.0
        return out


#: The profile of a model measured on the sufficiency check (``memsif.llm.profiles``), so ``sufficiency_gate="auto"``
#: asks it: handed to an engine as its model's profile (``MemSIF(..., profile=TRUSTS_SUFFICIENCY)``).
TRUSTS_SUFFICIENCY = ModelProfile("fake-llm", judges_sufficiency=True)
