"""Memory tools for agents: ingest, ask, facts, correct and forget a fact — each on a namespace the caller
names.

The inspector's own endpoints keep their memory per browser session; an agent (any MCP client,
``gradio_client`` or plain HTTP) needs one it can name and come back to. These functions are
registered with ``gr.api`` and, when the app runs with ``MEMSIF_APP_MCP=1`` (or ``--mcp``), they
are the MCP server's tools (``/gradio_api/mcp/``); the page's endpoints are then left out of MCP.
Namespaces starting with ``ui-`` belong to browser sessions and are refused here.
"""

from __future__ import annotations

import functools
import inspect
import json
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from memsif import Evidence, MemSIFError, as_memories, checked_namespace, load_transcripts, parse_time
from memsif.inspector.common import Inspector, refusal, tool_guard

#: The fields of each record a tool reply carries (replies are ``model_dump(mode="json")`` of them).
ASK_FACT_FIELDS = {"id", "kind", "type", "subject", "statement", "source_message_ids"}
CORE_FACT_FIELDS = {"id", "type", "subject", "statement", "source_message_ids", "valid_from", "verification"}
ACTIVE_FACT_FIELDS = {"id", "subject", "statement", "source_message_ids"}


def _json(value: dict[str, Any]) -> str:
    """Tool results are JSON text: every MCP client and language reads it."""
    return json.dumps(value, ensure_ascii=False, default=str)


def _evidence(e: Evidence) -> dict[str, Any]:
    """An evidence item as a tool reply gives it: its turns' ids, speaker, ISO date, text, search paths."""
    return {"message_ids": e.source_message_ids, "speaker": e.subject,
            "time": e.time.isoformat() if e.time else None, "statement": e.statement, "found_by": e.found_by}


def _building(ns: str) -> dict[str, Any]:
    """The reply to an ingest into ``ns`` while another build holds it."""
    state = _UNDER_WAY.get(ns)
    where = state.said() if state else "another job of this memory holds it (a build or a correction)"
    return {"namespace": ns, "status": "building", "under_way": where, "messages_added": 0,
            "message": f"a build of {ns!r} is under way ({where}); this call added nothing and did not wait. Ask "
                       "it with memory_ask meanwhile (it answers from what is built), and call memory_ingest again "
                       "when the build ends to add what it holds."}


def _namespace(namespace: str) -> str:
    name = (namespace or "").strip()
    if not name:
        raise refusal("namespace is empty: name the memory to use, e.g. 'alice-assistant'.")
    try:
        name = checked_namespace(name)
    except MemSIFError as exc:
        raise refusal(str(exc)) from None
    if name.startswith("ui-"):
        raise refusal(f"namespace {name!r} starts with 'ui-', which belongs to a browser session of the inspector; "
                       "choose another name.")
    return name


def one_line_items(doc: str) -> str:
    """``doc`` with each ``Args:`` item and the ``Returns:`` text on one line: Gradio reads a
    parameter's description from its first line only and joins Returns lines with commas, so a
    wrapped docstring reaches an agent cut off ("…session headers,") or with stray commas."""
    out: list[str] = []
    section = ""
    for line in inspect.cleandoc(doc).split("\n"):
        stripped = line.strip()
        if stripped in ("Args:", "Returns:"):
            section = stripped
        elif stripped and ((section == "Returns:" and out[-1].strip() != "Returns:")
                           or (section == "Args:" and len(line) - len(line.lstrip()) > 4)):
            out[-1] = f"{out[-1]} {stripped}"
            continue
        out.append(line)
    return "\n".join(out)


@dataclass
class IngestUnderWay:
    """Where an agent's ingest into one namespace stands (its progress reports), for a retry to be told."""

    started: float = field(default_factory=time.monotonic)
    done: int = 0
    total: int = 0
    stage: str = "starting"

    def report(self, done: int, total: int, stage: str) -> None:
        self.done, self.total, self.stage = done, total, stage

    def said(self) -> str:
        where = f"{self.stage}, {self.done} of {self.total}" if self.total else self.stage
        return f"{where}, {time.monotonic() - self.started:.0f} s since it started"


#: Agents' ingests under way, by namespace (this process).
_UNDER_WAY: dict[str, IngestUnderWay] = {}


@dataclass(frozen=True)
class AgentTools:
    """The agent tools, bound to the page's ``Inspector`` (``app``): each takes a namespace the caller
    names."""

    app: Inspector

    @tool_guard
    def memory_ingest(self, namespace: str, transcript: str, format: str = "auto", sample: str = "",
                      core_facts: bool = False, replace: bool = False, include_do_not_remember: bool = False) -> str:
        """Add a conversation to a named memory and build its Structured Interaction Memory (Topical
        Segments, Event Trajectories); optionally extract CoreFacts too (minutes on the default model).
        Each call appends: a new session whose lines restart the numbering is stored after the sessions
        the memory holds; ingesting the same messages again adds nothing. The conversations of a ChatGPT
        or Claude export are one history.

        Args:
            namespace: the memory to write to (created on first use); not starting with 'ui-'.
            transcript: the conversation's text: 'Speaker: text' lines with '## <date>' session headers,
                JSONL ({"speaker", "text", "time"} per line), a chat log ('[31/12/2023, 22:02] Ana: text' lines, as
                WhatsApp exports them), or a LoCoMo / LongMemEval / ChatGPT / Claude / OpenAI-messages JSON document.
            format: 'auto' (detect) or one of locomo, longmemeval, chatgpt, claude, openai, jsonl, chatlog,
                chatlog-dmy, chatlog-mdy (a chat log whose dates are day/month or month/day), text.
            sample: which conversation of a file that holds several (LoCoMo, LongMemEval, an export); empty for all.
            core_facts: also extract and consolidate CoreFacts now.
            replace: the transcript is a corrected version of messages the memory holds (same ids, another
                text, speaker or date): they take its version and the memory is rebuilt. Without it such a
                call is refused with the differences listed.
            include_do_not_remember: also ingest the conversations their person marked do-not-remember (left
                out by default, with a warning); only when that person asked for it.

        Returns:
            JSON: namespace, status ("built"), messages added, messages in memory, Topical Segments, Event
            Trajectories, CoreFact operations by kind, load warnings, seconds. While another build of the same
            namespace is under way (a retry of a call that timed out) the call is not queued behind it: it
            returns at once with status "building", where that build stands and messages added 0; call again
            when it ends.
        """
        ns = _namespace(namespace)
        if not transcript or not transcript.strip():
            raise refusal("transcript is empty: pass the conversation's text.")
        suffix = ".json" if transcript.lstrip()[:1] in "{[" else ".txt"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"transcript{suffix}"
            path.write_text(transcript, encoding="utf-8")
            transcripts = as_memories(load_transcripts(path, sample=sample or None, format=format,
                                                       include_do_not_remember=include_do_not_remember))
        eng = self.app.engine()
        held = eng.lock(ns)
        if not held.acquire(blocking=False):  # a retry, or a build of it elsewhere: answered now, not queued
            return _json(_building(ns))
        try:
            state = _UNDER_WAY[ns] = IngestUnderWay()
            reports = [eng.ingest_transcript(t, namespace=ns, progress=state.report, core_facts=core_facts,
                                             replace=replace) for t in transcripts]
        finally:
            _UNDER_WAY.pop(ns, None)
            held.release()
        ops: Counter[str] = Counter()
        for r in reports:
            ops.update(r.fact_ops)
        last = reports[-1]
        return _json({"namespace": ns, "status": "built", "messages_added": sum(r.messages for r in reports),
                "messages_in_memory": last.total_messages, "topical_segments": last.segments,
                "event_trajectories": last.trajectories, "core_fact_operations": ops,
                "warnings": [w for t in transcripts for w in t.warnings] + [w for r in reports for w in r.warnings],
                "seconds": round(sum(r.seconds for r in reports), 2)})

    @tool_guard
    def memory_ask(self, namespace: str, question: str, question_date: str = "") -> str:
        """Answer a question from a named memory, with the evidence it rests on.

        Args:
            namespace: the memory to read (as given to memory_ingest).
            question: the question.
            question_date: when the question is asked (e.g. '2023-06-01'), for relative dates; empty for none.

        Returns:
            JSON: answer; the facts and evidence used, each with the message ids it comes from; whether the
            facts alone were judged sufficient; unsupported mentions (names, numbers, dates of the answer
            not in its context); nothing_relevant (nothing in the memory is about the question: the answer
            says so) with the best match's relevance; the model, whether it is the packaged demo model,
            what ran it (backend) and, when the configured back-end could not run, why (backend_warning).
        """
        ns = _namespace(namespace)
        if not question or not question.strip():
            raise refusal("question is empty.")
        a = self._holding(ns).ask(question, namespace=ns, question_date=question_date or None)
        return _json({
                "answer": a.answer, "sufficient": a.sufficient, "model": a.model, "model_at_chance": a.model_at_chance,
                "backend": a.backend, "backend_warning": a.backend_warning,
                "unsupported_mentions": a.unsupported_mentions,
                "premise_mentions": a.premise_mentions, "nothing_relevant": a.nothing_relevant,
                "relevance": a.relevance,
                "facts": [f.model_dump(mode="json", include=ASK_FACT_FIELDS) for f in a.facts_used],
                "evidence": [_evidence(e) for e in a.evidence_used],
                "seconds": round(a.seconds, 2)})

    @tool_guard
    def memory_facts(self, namespace: str, subject: str = "") -> str:
        """The current CoreFacts (schema-guided, consolidated, verified against their sources) and promoted
        ActiveFacts (query-driven) of a named memory, each with the message ids it comes from.

        Args:
            namespace: the memory to read.
            subject: only facts about this subject (case-insensitive); empty for all.

        Returns:
            JSON: core_facts (verified only, each with its verification) and active_facts, each with id,
            subject, statement and source_message_ids; held_back counts the CoreFacts not verified (a model
            not measured to verify, a failed check, a memory built before facts were verified) and says why.
        """
        ns = _namespace(namespace)
        eng = self._holding(ns)
        wanted = subject.strip().lower()
        facts = [f for f in eng.facts(ns) if not wanted or f.subject.lower() == wanted]
        core = [f.model_dump(mode="json", include=CORE_FACT_FIELDS) for f in facts if f.verified]
        unverified = [f for f in facts if not f.verified]
        reasons = sorted({f.verification.rule.split(";")[0] if f.verification else
                          "stored before facts were verified: build the memory again" for f in unverified})
        active = [a.model_dump(mode="json", include=ACTIVE_FACT_FIELDS)
                  for a in eng.active_facts(ns) if not wanted or wanted in a.subject.lower()]
        return _json({"namespace": ns, "core_facts": core, "active_facts": active,
                      "held_back": {"core_facts": len(unverified), "why": reasons}})

    @tool_guard
    def memory_correct_fact(self, namespace: str, fact_id: str, statement: str = "", subject: str = "",
                            type: str = "", when: str = "") -> str:
        """Correct a CoreFact of a named memory: a new version with the given fields supersedes it (the old
        one stays in the history), is verified by your word, and is never changed back by a later extraction.

        Args:
            namespace: the memory (as given to memory_ingest).
            fact_id: the CoreFact's id, e.g. 'F12' (memory_facts lists them).
            statement: its new statement; empty to keep it.
            subject: its new subject (a person's name); empty to keep it.
            type: its new type, one of the memory's fact types; empty to keep it.
            when: its new event date, e.g. '2023-05-08'; empty to keep it.

        Returns:
            JSON: the EDIT operation (op, fact_ids = [old id, new id], reason with the previous values,
            recorded_at, the facts before and after).
        """
        ns = _namespace(namespace)
        eng = self._holding(ns)
        date = None
        if when.strip():
            try:
                date = parse_time(when)
            except ValueError as exc:
                raise refusal(f"when {when!r} is not a date ({exc}): give e.g. '2023-05-08'.") from exc
        op = eng.edit_fact(ns, fact_id, statement=statement or None, subject=subject or None, type=type or None,
                           when=date)
        return _json(op.model_dump(mode="json"))

    @tool_guard
    def memory_forget_fact(self, namespace: str, fact_id: str, restore: bool = False) -> str:
        """Delete a CoreFact ('F…') or ActiveFact ('A…') of a named memory: it leaves every answer and the
        fact lists, and stays in the history; with restore, take a deletion back.

        Args:
            namespace: the memory (as given to memory_ingest).
            fact_id: the fact's id, e.g. 'F12' or 'A3' (memory_facts lists them).
            restore: restore a deleted fact instead of deleting one.

        Returns:
            JSON: the DELETE or RESTORE operation (op, fact_ids, reason, recorded_at).
        """
        ns = _namespace(namespace)
        eng = self._holding(ns)
        op = eng.restore_fact(ns, fact_id) if restore else eng.delete_fact(ns, fact_id)
        return _json(op.model_dump(mode="json"))

    def _holding(self, ns: str):
        """The engine, refused when namespace ``ns`` holds no memory."""
        eng = self.app.engine()
        if not eng.has_memory(ns):
            raise refusal(f"namespace {ns!r} holds no memory yet: call memory_ingest first.")
        return eng

    def register(self) -> None:
        """Register the tools as API endpoints (and MCP tools) of the Blocks being built, with their
        docstrings as Gradio reads them (``one_line_items``)."""
        for fn in (self.memory_ingest, self.memory_ask, self.memory_facts, self.memory_correct_fact,
                   self.memory_forget_fact):
            @functools.wraps(fn)
            def tool(*args, _fn=fn, **kwargs):
                return _fn(*args, **kwargs)
            tool.__doc__ = one_line_items(fn.__doc__ or "")
            gr.api(tool, api_name=fn.__name__)
