"""What every LLM back-end shares: the ``LLM`` protocol, ``Generation`` and the helpers over it.

Decisions that pick among a few options are *scored*, not generated: ``yes_probability`` runs one
forward pass and compares the probabilities of the answer tokens (docs/models.md, "The judges' decision points").
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from memsif.errors import LLMError, LLMOutputError
from memsif.markdown import escape_markdown
from memsif.prompts import Prompt

#: Spellings of the two answers whose first-token probabilities are compared.
YES_WORDS = ("yes", "Yes", "YES")
NO_WORDS = ("no", "No", "NO")


def first_tokens(encode: Callable[[str], Sequence[int]], words: Sequence[str]) -> list[int]:
    """Sorted first token ids of each of ``words``, alone and after a space, as ``encode`` tokenizes them."""
    return sorted({toks[0] for word in words for variant in (word, " " + word) if (toks := encode(variant))})


def common_length(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix all ``rows`` share."""
    columns = zip(*rows, strict=False)
    return next((i for i, column in enumerate(columns) if len(set(column)) > 1), min(map(len, rows)))


def chat_messages(prompt: Prompt) -> list[dict[str, str]]:
    """``prompt`` as the system and user messages of a chat."""
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.text}]


def render(prompt: Prompt, template: Callable[[list[dict[str, str]]], str] | None) -> str:
    """``prompt`` as a model reads it: its ``chat_messages`` through the model's chat ``template``; for a model
    without one, the two texts and "Answer:"."""
    return template(chat_messages(prompt)) if template else f"{prompt.system}\n\n{prompt.text}\n\nAnswer:"

#: A back-end announces a prompt only when at least this many of its tokens are not in its cache (shorter
#: reads take well under a second on any host seen).
READING_MIN_TOKENS = 32


@dataclass(frozen=True)
class Reading:
    """A prompt a back-end is about to read: ``tokens`` not in its key/value cache, and the ``seconds`` that
    take at the prompt speed it measured on this host (None before it measured one)."""

    tokens: int
    seconds: float | None

    def text(self) -> str:
        """"Reading 640 tokens of memory, about 30 s on this CPU" (without the time before it is measured)."""
        about = f", about {self.seconds:.0f} s on this CPU" if self.seconds is not None else ""
        return f"Reading {self.tokens} tokens of memory{about}…"


_reading: contextvars.ContextVar[Callable[[Reading], None] | None] = contextvars.ContextVar("memsif_reading",
                                                                                           default=None)


@contextmanager
def reading_reported(listener: Callable[[Reading], None]) -> Iterator[None]:
    """Within the block, this thread's back-end calls hand ``listener`` a ``Reading`` before each prompt
    of at least ``READING_MIN_TOKENS`` uncached tokens (the chat shows it while the prompt is read)."""
    token = _reading.set(listener)
    try:
        yield
    finally:
        _reading.reset(token)


def announce_reading(tokens: int, tokens_per_s: float | None) -> None:
    """For back-ends: ``tokens`` are about to be read at ``tokens_per_s`` (None: not measured yet); tells the
    listener of ``reading_reported``, if any, when there are enough to wait for."""
    listener = _reading.get()
    if listener is not None and tokens >= READING_MIN_TOKENS:
        listener(Reading(tokens, tokens / tokens_per_s if tokens_per_s else None))


@dataclass(frozen=True)
class Generation:
    """Text produced by ``generate`` with its token counts."""

    text: str
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True)
class Runtime:
    """What runs a model, for the page and every ``--json`` output: the back-end ("llama.cpp",
    "transformers", "openai") and its details (the CPU library, the dtype, the server). When the
    configured back-end could not run and another stands in, ``fallback_from`` names the one that
    should have run, ``reason`` why it could not, ``cost`` what the stand-in costs and ``fix`` the
    command that brings it back."""

    backend: str
    detail: str = ""
    fallback_from: str = ""
    reason: str = ""
    cost: str = ""
    fix: str = ""

    def line(self) -> str:
        """"llama.cpp · CPU library zen4 (…)"; with "(fallback: llama.cpp cannot run here)" on a fallback."""
        text = " · ".join(p for p in (self.backend, self.detail) if p)
        return f"{text} (fallback: {self.fallback_from} cannot run here)" if self.fallback_from else text

    def warning(self) -> str:
        """Markdown warning for a fallback ("" when the configured back-end runs); the reason (which
        quotes a child's stderr) and the cost are escaped, shown as written."""
        if not self.fallback_from:
            return ""
        return (f"⚠️ **The model runs on {self.backend}, not {self.fallback_from}**: {escape_markdown(self.reason)} "
                f"Cost: {escape_markdown(self.cost)} Fix: `{self.fix}`, then restart.")

    def as_dict(self) -> dict[str, str]:
        """The fields, for JSON outputs."""
        return asdict(self)


def runtime_of(llm: object) -> Runtime:
    """``llm.runtime``; for an LLM without one (a fake, a wrapper without ``runtime``), its class name."""
    if isinstance(llm, RunsOn) and isinstance(llm.runtime, Runtime):
        return llm.runtime
    if isinstance(llm, Wraps) and llm.inner is not llm:  # wrappers that count or record calls
        return runtime_of(llm.inner)
    return Runtime(type(llm).__name__)


class LLM(Protocol):
    """What the engine needs from a language model."""

    name: str

    def yes_probability(self, prompts: Sequence[Prompt]) -> list[float]:
        """P(yes) / (P(yes) + P(no)) for each prompt's first answer token, in [0, 1].

        Raises:
            LLMError: the model could not be called.
            LLMOutputError: neither answer token is among the model's candidates.
        """
        ...

    def choice_probabilities(self, prompt: Prompt, labels: Sequence[str]) -> list[float]:
        """Probability of each single-token ``label`` (e.g. "A", "B") as the first answer token,
        normalised over the labels; one forward pass.

        Raises:
            LLMError, LLMOutputError: as for ``yes_probability``.
        """
        ...

    def generate(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                 json_schema: dict[str, Any] | None = None, stop: Sequence[str] = ()) -> Generation:
        """Free text for ``prompt`` (sampling at ``temperature``; 0 means greedy). With ``json_schema``
        the back-end constrains or requests JSON of that schema where it can; generation ends at any
        of the ``stop`` strings."""
        ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` with this model's tokenizer."""
        ...


# Optional capabilities: a back-end has them or not; the engine checks with isinstance.
@runtime_checkable
class RunsOn(Protocol):
    """A back-end that says what runs it (``Runtime``: library, device, a fallback and why)."""

    runtime: Runtime


@runtime_checkable
class Wraps(Protocol):
    """A wrapper that counts or records the calls of the LLM it holds (``inner``)."""

    inner: object


@runtime_checkable
class BatchGenerator(Protocol):
    """A back-end that generates for several prompts as one padded batch."""

    def generate_batch(self, prompts: Sequence[Prompt], max_new_tokens: int = 512, temperature: float = 0.1,
                       json_schema: dict[str, Any] | None = None) -> Sequence[Generation | Exception]: ...


@runtime_checkable
class StreamGenerator(Protocol):
    """A back-end that yields the text as it is generated, then the whole ``Generation``."""

    def generate_stream(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                        stop: Sequence[str] = ()) -> Iterator[str | Generation]: ...


@runtime_checkable
class ServesJobs(Protocol):
    """A back-end that runs some kinds of job on a context of their own (llama.cpp: CoreFact extraction,
    so a chat answer runs between two of its tokens); ``for_job`` hands out the handle those calls use."""

    def for_job(self, kind: str) -> LLM: ...


def for_job(llm: LLM, kind: str) -> LLM:
    """``llm`` as the calls of a job of ``kind`` (``memsif.locks.KINDS``: "facts" for CoreFact extraction)
    use it: the back-end's handle for that kind where it serves kinds apart (``ServesJobs``), else ``llm``.
    The code that starts the job says which job it is, by the handle it calls."""
    return llm.for_job(kind) if isinstance(llm, ServesJobs) else llm


@runtime_checkable
class HasContextWindow(Protocol):
    """A back-end that knows how many tokens it attends to (prompt + answer)."""

    context_window: int


def generate_many(llm: LLM, prompts: Sequence[Prompt], max_new_tokens: int = 512, temperature: float = 0.1,
                  json_schema: dict[str, Any] | None = None) -> list[Generation | Exception]:
    """``llm.generate`` for several independent prompts: one padded batch where the back-end offers
    ``generate_batch`` (transformers: on CPU a batch of 4 costs about 1.4× one prompt's per-token
    time), else one after the other. One result per prompt, in order: a ``Generation``, or the
    ``LLMError`` that prompt raised (the others still count)."""
    if isinstance(llm, BatchGenerator) and len(prompts) > 1:
        try:
            return list(llm.generate_batch(prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                                           json_schema=json_schema))
        except LLMError:
            pass  # the batch failed as a whole: each prompt alone says which one fails
    out: list[Generation | Exception] = []
    for prompt in prompts:
        try:
            out.append(llm.generate(prompt, max_new_tokens=max_new_tokens, temperature=temperature,
                                    json_schema=json_schema))
        except LLMError as exc:
            out.append(exc)
    return out


def generate_streamed(llm: LLM, prompt: Prompt, on_text: Callable[[str], None] | None, max_new_tokens: int = 512,
                      temperature: float = 0.1, stop: Sequence[str] = ()) -> Generation:
    """``llm.generate`` that hands each new piece of text to ``on_text`` as it is produced (the chat
    shows the answer token by token). Back-ends with ``generate_stream`` (llama.cpp, transformers)
    stream; others give the whole text once at the end. Without ``on_text`` it is ``generate``.

    Raises:
        LLMError: as ``generate``.
    """
    if on_text is None or not isinstance(llm, StreamGenerator):
        gen = llm.generate(prompt, max_new_tokens=max_new_tokens, temperature=temperature, stop=stop)
        if on_text is not None and gen.text:
            on_text(gen.text)
        return gen
    pieces: list[str] = []
    result = None
    for item in llm.generate_stream(prompt, max_new_tokens=max_new_tokens, temperature=temperature, stop=stop):
        if isinstance(item, Generation):  # the last item: the whole text with its token counts
            result = item
            break
        pieces.append(item)
        on_text(item)
    return result or Generation("".join(pieces), llm.count_tokens(prompt.text), len(pieces))


def context_window(llm: LLM) -> int:
    """Tokens ``llm`` attends to (prompt + answer); 4096 when the back-end does not say."""
    return int(llm.context_window or 4096) if isinstance(llm, HasContextWindow) else 4096


def label_shares(masses: Sequence[float], labels: Sequence[str], model: str, seen: str = "") -> list[float]:
    """Each label's probability mass divided by the labels' total: the model's choice among these
    labels only (every back-end's ``yes_probability`` and ``choice_probabilities`` end here).

    Raises:
        LLMOutputError: no mass on any label (``seen``: what the model put first instead).
    """
    total = float(sum(masses))
    if total <= 0.0:
        which = f"neither {labels[0]} nor {labels[1]}" if len(labels) == 2 else f"none of {list(labels)}"
        raise LLMOutputError(f"{model} gave {which} a probability{seen}.")
    return [float(m) / total for m in masses]
