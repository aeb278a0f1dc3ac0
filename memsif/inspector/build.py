"""Build tab: upload a transcript (or take the bundled LoCoMo conversation), build Structured
Interaction Memory with live progress, and read it on the φ timeline and the Topical Segment
table (§3.2); delete the session's memory."""

from __future__ import annotations

import logging
import math
import os
import re
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import gradio as gr

from memsif import (
    HISTORY_FORMATS,
    PACKAGED_MODELS,
    AmbiguousDates,
    BoundaryRule,
    JobCancelled,
    MemSIFConfig,
    MemSIFError,
    NamespaceExport,
    SegmentDecision,
    SourceConflict,
    TrajectoryDecision,
    as_memories,
    check_export,
    day_text,
    default_data_dir,
    is_export,
    job,
    load_transcripts,
    read_export,
    readable,
    runtime_of,
    same_content,
    waited,
    write_export,
)
from memsif.inspector.common import (
    EMPTIED,
    EXAMPLE,
    EXAMPLE_MEMORY,
    BuiltSource,
    Inspector,
    JobProgress,
    Page,
    SessionSettings,
    Views,
    guard,
    in_background,
    model_share,
    new_session,
    until_done,
)
from memsif.inspector.pace import FACTS, STRUCTURE, TITLES, left_text, span_text
from memsif.markdown import code_span, escape_markdown
from memsif.viz import SEGMENT_COLUMNS, phi_timeline, segment_rows

log = logging.getLogger(__name__)

#: ``EXAMPLE_MEMORY`` (``common``) is ``EXAMPLE``'s memory prebuilt with the default models
#: (``benchmarks/build_example.py``): the first visit imports it in seconds instead of building it live.
__all__ = ["EXAMPLE", "EXAMPLE_MEMORY", "BuildTab"]
#: How many of the example's own questions the prebuilt memory was asked at least (more until one
#: ActiveFact is promoted: ``benchmarks/build_example.py``).
EXAMPLE_QUESTIONS = 6
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
#: While a memory builds, its timeline and segment table are drawn again this often (seconds).
REDRAW_SECONDS = 10.0
MAX_ZIP_UPLOAD_BYTES = 200 * 1024 * 1024

NOTATION_TIMELINE = """
- **φ(u_t, S_i)** (Eq. 1): how well message u_t matches the open Topical Segment S_i:
  α·s_sem + (1−α)·J, with **s_sem** the embedding similarity mapped to [0, 1] and **J** the Jaccard overlap of
  their **key entities** (names, places, things; spaCy).
- **τ_merge** (upper dashed line): at or above it the message joins S_i by rule. **τ_split** (lower dashed line):
  at or below it the message opens a new segment by rule. Between them the LLM **judge** decides; hover shows its
  probability **P** that the topic continues (the judge continues at P ≥ 0.5).
- Colours: merged by rule, split by rule, judge: continue, judge: split. **Alternating bands** are the Topical
  Segments; **dotted vertical lines** are session starts.
- In the table, **opened by** is the rule that started each segment, and **key entities** its entity set.
"""

#: What the upload takes, said with every refusal.
ACCEPTED = ("Accepted: LoCoMo or LongMemEval JSON, a ChatGPT or Claude export (its ZIP, or `conversations.json`), "
            "a Telegram (`result.json`), Discord (DiscordChatExporter), Messenger or Instagram (`message_1.json`) "
            "or Slack export, an OpenAI message list, JSONL (`{\"speaker\", \"text\", \"time\"}` per line), a chat "
            "log as WhatsApp exports it (`[31/12/2023, 22:02] Ana: text` lines, or its ZIP) or plain text "
            "(`Speaker: text` lines, `## date` "
            "headers), up to 20 MB (a ZIP up to 200 MB); a MemSIF export (`.json.gz`, the Download of this page) "
            "restores a memory.")


class UploadRefused(Exception):
    """An upload that cannot be read: ``str()`` is the one message the page shows."""


#: The page's choices for a chat log whose dates could be read either way (``chatlog.AmbiguousDates``).
DATE_ORDERS = [("Detect from the file", "detect"), ("Day first (31/12)", "chatlog-dmy"),
               ("Month first (12/31)", "chatlog-mdy")]


def load_upload(path: str, sample: str | None = None, dates: str = "detect", private: bool = False) -> list:
    """The transcripts of an uploaded file, or :class:`UploadRefused` with one message that names the
    file as the user knows it (not Gradio's temporary folder), says what it looks like and what is
    accepted (the file's name and what the file said shown as written). ``dates``: how to read a chat
    log whose dates could be either order (``DATE_ORDERS``); ``private``: include the conversations marked
    do-not-remember."""
    try:
        try:
            return load_transcripts(path, sample=sample or None, include_do_not_remember=private)
        except AmbiguousDates as exc:
            if dates == "detect":
                raise AmbiguousDates(f"{exc} On this page: choose the order under Chat-log dates (above) and build "
                                     "again.") from exc
            return load_transcripts(path, sample=sample or None, format=dates, include_do_not_remember=private)
    except MemSIFError as exc:
        said = str(exc).replace(str(Path(path).parent) + "/", "").replace(f"file {Path(path).name}: ", "", 1)
        raise UploadRefused(f"⚠️ **{escape_markdown(Path(path).name)}** was not loaded: {escape_markdown(said)}\n\n"
                            f"{ACCEPTED} Nothing was changed: "
                            "this session's memory and views are as they were.") from exc


def checked_path(file) -> str:
    """The uploaded file's path. Raises gr.Error: the file is over 20 MB (an export's ZIP, whose photos and
    recordings are not read: over 200 MB)."""
    path = file if isinstance(file, str) else file.name
    limit = MAX_ZIP_UPLOAD_BYTES if str(path).lower().endswith(".zip") else MAX_UPLOAD_BYTES
    if os.path.getsize(path) > limit:
        raise gr.Error(f"The file is larger than {limit // 2**20} MB; split it and upload the parts"
                       f"{' (or upload the conversations.json inside it)' if limit == MAX_ZIP_UPLOAD_BYTES else ''}.")
    return path


#: The Sample choice that builds every conversation of an export into one memory (the default).
ALL_CONVERSATIONS = "all conversations"


def sample_choices(transcripts: list) -> tuple[list[tuple[str, str]], str | None]:
    """(label, value) choices of the Sample box and the default: an export's conversations by title
    and date after "All conversations", the default; a LoCoMo or LongMemEval file's sample ids, the
    first the default."""
    exports = [t for t in transcripts if t.format in HISTORY_FORMATS]
    if len(exports) > 1:
        listed = sorted(exports, key=lambda t: (t.first_time is None, t.first_time or datetime.min))
        choices = [(f"All conversations ({len(exports)}, one history)", ALL_CONVERSATIONS)] + [
            (f"{t.title} · {day_text(t.first_time)} · {len(t.messages)} messages", t.sample_id) for t in listed]
        return choices, ALL_CONVERSATIONS
    if len(transcripts) == 1 and transcripts[0].format not in ("locomo", "longmemeval"):
        t = transcripts[0]  # a plain file is one conversation: say so rather than show its file stem alone
        what = f"“{t.title}”" if t.format in HISTORY_FORMATS and t.title else "the whole file"
        return [(f"{what} · {len(t.messages)} messages", t.sample_id)], t.sample_id
    ids = [t.sample_id for t in transcripts]
    return [(i, i) for i in ids], ids[0] if ids else None


def list_samples(file):
    """The Sample box for an uploaded transcript file (an export's conversations by title and date,
    LoCoMo's and LongMemEval's sample ids), and the page's one message when the file cannot be read.
    Returns (sample dropdown, build summary)."""
    none = gr.Dropdown(choices=[], value=None)
    if file is None:
        return none, gr.skip()
    if is_export(path := checked_path(file)):
        return none, ("A MemSIF export: **Build memory** restores it into this session, replacing what the session "
                      "holds.")
    try:
        choices, value = sample_choices(load_upload(path))
    except UploadRefused as exc:
        return none, str(exc)
    return gr.Dropdown(choices=choices, value=value), gr.skip()


def question_hint(transcripts: list) -> str:
    """An example question about the loaded transcript for the chat box: its own first question when
    the file carries questions (LoCoMo, LongMemEval), else one about its most talkative speaker."""
    for t in transcripts:
        qa = [q.get("question") for q in t.extra.get("qa", []) if isinstance(q, dict) and q.get("question")]
        if qa:
            return str(qa[0])
        if t.extra.get("question"):
            return str(t.extra["question"])
    speakers = Counter(m.speaker for t in transcripts for m in t.messages)
    return f"What did {speakers.most_common(1)[0][0]} talk about?" if speakers else "Ask this memory a question"


def _contents(transcripts: list) -> str:
    """What was built, for the summary: sample ids, or an export's conversation titles."""
    return "; ".join(f"{len(sessions)} conversation{'s' if len(sessions) != 1 else ''}: "
                     + escape_markdown(", ".join(s["title"] for s in sessions))
                     if (sessions := t.extra.get("sessions")) else escape_markdown(t.sample_id) for t in transcripts)


def redrawn(draw, placed, anew: bool, every: float | None = None):
    """For each status of a live build, the timeline and segment table: empty at once when the memory is
    begun ``anew`` (else as they are), then ``draw()`` every ``every`` seconds (``REDRAW_SECONDS``) once
    ``placed()`` says messages were placed (the models are loaded: a read then never waits for them), as
    the ingest writes its parts (``StoreSettings.persist_every``); ``gr.skip()`` between."""
    yield (None, []) if anew else (gr.skip(), gr.skip())
    drawn = time.monotonic()
    while True:
        if placed() and time.monotonic() - drawn >= (REDRAW_SECONDS if every is None else every):
            drawn = time.monotonic()
            yield draw()
        else:
            yield gr.skip(), gr.skip()


#: A build is degenerate when more than this share of its Topical Segments hold one message …
SINGLE_SEGMENT_WARN = 0.5
#: … or when at least ``JUDGE_MIN_VERDICTS`` judge verdicts go one way this often.
JUDGE_ONE_WAY_WARN = 0.95
JUDGE_MIN_VERDICTS = 10


def where_it_lies(eng, namespace: str) -> str:
    """One line under every build: the session's namespace, where its memory lies and the command that
    reads it from a terminal while the app runs (a read-only snapshot of the folder)."""
    config = eng.config
    if config.store.qdrant_url:
        return (f"\n\n**This session's memory**: namespace {code_span(namespace)} on the Qdrant server "
                f"{code_span(config.store.qdrant_url)}.")
    data_dir = config.store.resolved_data_dir
    folder = "" if data_dir == default_data_dir() else f" --data-dir {data_dir}"
    return (f"\n\n**This session's memory**: namespace {code_span(namespace)} in "
            f"{code_span(str(config.store.resolved_data_dir))}. From a terminal while the app runs: "
            f"{code_span(f'python -m memsif show --namespace {namespace}{folder}')} (also `facts`, `ask`, `export`; "
            f"{code_span(f'python -m memsif namespaces{folder}')} lists them), read from a snapshot, read-only.")


def structure_health(eng, namespace: str) -> str:
    """One line under every build: the share of single-message Topical Segments, the judge's verdict
    split and the share of messages it decided; a warning with its reason when the structure is
    degenerate (thresholds ``SINGLE_SEGMENT_WARN``, ``JUDGE_ONE_WAY_WARN``)."""
    segments = eng.segments(namespace)
    messages = sum(len(s.message_ids) for s in segments)
    single = sum(1 for s in segments if len(s.message_ids) == 1)
    decisions = eng.decisions(namespace)  # one read for both kinds
    judged = [d.continued for d in decisions
              if isinstance(d, SegmentDecision) and d.rule == BoundaryRule.JUDGE]
    kept = sum(judged)
    single_share = single / len(segments) if segments else 0.0
    line = (f"\n\n**Structure health**: {single} of {len(segments)} Topical Segments hold one message "
            f"({single_share:.0%}); the judge decided {len(judged)} of {messages} messages "
            f"({len(judged) / max(messages, 1):.0%}): {kept} continue, {len(judged) - kept} split.")
    assigned = list({d.segment_id: d for d in decisions if isinstance(d, TrajectoryDecision)}.values())  # latest
    clustered = [d for d in assigned if d.threshold is not None]
    if clustered:
        shared = sum(not d.created for d in clustered)
        multi = sum(1 for t in eng.trajectories(namespace) if len(t.segment_ids) > 1)
        line += (f" Event Trajectories: {shared} of {len(clustered)} segments share one with another ({multi} "
                 f"trajectories of two or more), decided over the whole memory by {clustered[-1].link_model} "
                 f"at P(same thread) ≥ {clustered[-1].threshold:g}; no model was asked (Trajectories tab).")
    elif assigned:
        asked = [c.compatible for d in assigned for c in d.candidates if c.judge_prob is not None]
        chosen = [d for d in assigned if d.none_prob is not None]
        joined = sum(not d.created for d in assigned)
        line += f" Event Trajectories: {joined} of {len(assigned)} segments joined an earlier one"
        if chosen:
            line += f"; the model was asked to choose for {len(chosen)} of them (Trajectories tab)."
        elif asked:
            line += (f"; the trajectory judge called {sum(asked)} of the {len(asked)} candidates it was asked about "
                     "the same event (Trajectories tab).")
        else:
            line += "; no model was asked: the link rule decided (Trajectories tab)."
    reasons = []
    if len(segments) >= 5 and single_share > SINGLE_SEGMENT_WARN:
        reasons.append(f"more than {SINGLE_SEGMENT_WARN:.0%} of the segments are single messages")
    one_way = max(kept, len(judged) - kept) / len(judged) if judged else 0.0
    if len(judged) >= JUDGE_MIN_VERDICTS and one_way >= JUDGE_ONE_WAY_WARN:
        way = "a continuation" if kept >= len(judged) - kept else "a split"
        reasons.append(f"{one_way:.0%} of the judge's verdicts were {way} (warned at {JUDGE_ONE_WAY_WARN:.0%})")
    if reasons:
        line += f"\n\n⚠️ The structure looks degenerate: {'; '.join(reasons)}. {degenerate_advice(eng)}"
    return line


def degenerate_advice(eng) -> str:
    """What to try when a build's structure looks degenerate, for the model that built it: with the default
    model, the thresholds (its judge separates topics at AUC 0.86); with another, the default model first."""
    thresholds = ("the timeline shows each message's φ against τ_split and τ_merge: set them in Settings so that "
                  "φ falls between them only where the topic is unclear, and build again")
    default = PACKAGED_MODELS[MemSIFConfig().model.llm_model].name.split(" (")[0]  # the model, not its build
    if (eng.llm.name or "").startswith(default):
        return (f"The default model's judge separates topics at AUC 0.86 (docs/results.md), so the thresholds "
                f"likely do not suit this conversation: {thresholds}.")
    return (f"The judge ({eng.llm.name or 'the configured model'}) may not tell topics apart: the packaged 135M "
            "model is near chance (segment-judge AUC 0.55), the default 1.5B separates topics at AUC 0.86 "
            f"(docs/results.md). Build again with the default model; if it stays degenerate, {thresholds}.")


def threads(trajectories) -> str:
    """How many trajectories link two or more segments, in words ("3 hold two or more segments")."""
    linked = sum(1 for t in trajectories if len(t.segment_ids) > 1)
    return f"{linked} hold{'s' * (linked == 1)} two or more segments"


def prebuilt_summary(data: NamespaceExport, imported_s: float | None) -> str:
    """What the page says of the prebuilt example: what it holds, how and when it was built."""
    p = data.provenance
    asked = p.get("questions") or []
    loaded = f"Loaded in {imported_s:.1f} s. " if imported_s is not None else "Already loaded. "
    current = sum(f.fact.status == "current" for f in data.facts)
    return (f"**{len(data.messages)} messages** → **{len(data.segments)} Topical Segments**, "
            f"**{len(data.trajectories)} Event Trajectories** ({threads(data.trajectories)}), "
            f"**{current} current CoreFacts** from "
            f"`{EXAMPLE.name}` (conv-26): the **prebuilt example memory**, built on "
            f"{p.get('built', '?')} with `{p.get('model', '?')}` on {p.get('machine', '?')} — Structured Interaction "
            f"Memory in {p.get('structure_seconds', '?')} s, CoreFacts in {p.get('core_facts_seconds', '?')} s; "
            f"{len(asked)} of its own questions were asked, which left {len(data.clusters)} candidate clusters "
            f"and {len(data.active_facts)} promoted ActiveFact{'s' * (len(data.active_facts) != 1)} "
            f"(ActiveFacts tab). {loaded}Tick **Build the example live** to watch it being built instead "
            f"(`{p.get('command', 'benchmarks/build_example.py')}` rebuilds this file).")


def load_prebuilt(app: Inspector, eng, namespace: str, data: NamespaceExport, previous: BuiltSource | None,
                  source: BuiltSource) -> str:
    """Import the prebuilt example into ``namespace`` (replacing another memory it holds); returns the
    build summary."""
    if previous and previous.prebuilt and eng.has_memory(namespace):
        return prebuilt_summary(data, None)
    replaced = ""
    if eng.has_memory(namespace):
        app.delete_memory(namespace, "the memory was replaced by the prebuilt example")
        source.replaced = True
        replaced = f" (It replaced the memory of {code_span(previous.name)}.)" if previous else ""
    start = time.perf_counter()
    eng.import_namespace(data, namespace)
    return prebuilt_summary(data, time.perf_counter() - start) + replaced


def stopped_summary(eng, namespace: str, exc: MemSIFError) -> str:
    """The build summary of a build that stopped (cancelled or failed): why, and what the memory
    holds now (the views below show exactly that)."""
    if isinstance(exc, JobCancelled):
        head = f"⏹️ The build stopped: {exc}."  # a reason this page wrote (names in code spans)
    else:
        head = f"⚠️ The build failed: {escape_markdown(str(exc))}"
    if not eng.has_memory(namespace):
        return head + " This session holds no memory now."
    return (head + f" This session's memory holds what was built before it stopped: {len(eng.messages(namespace))} "
            f"messages in {len(eng.segments(namespace))} Topical Segments (below). Build again to go on: stored "
            "messages are skipped. CoreFacts were not extracted.")


def kept_note(app: Inspector, namespace: str, previous: BuiltSource | None, settings: SessionSettings | None) -> str:
    """What the session's memory still holds after a refused upload (the refusal replaces the build
    summary on the page, so it says what stayed)."""
    eng = app.session_engine(namespace, settings)
    if eng is None or not previous:
        return ""
    return (f" It holds {len(eng.messages(namespace))} messages in {len(eng.segments(namespace))} Topical "
            f"Segments, from {code_span(previous.name)}.")


def read_source(file, sample: str | None, dates: str = "detect", private: bool = False) -> tuple[list, BuiltSource]:
    """The transcripts of an upload (``file``: a path or Gradio's file; None: the bundled example)
    and what the session keeps of it.

    Raises:
        UploadRefused: the file cannot be read (its one message).
        gr.Error: the file is over 20 MB.
    """
    path = checked_path(file) if file is not None else str(EXAMPLE)
    transcripts = as_memories(load_upload(path, sample, dates, private))
    return transcripts, BuiltSource(
        path=path, sample=sample or None, name=readable(Path(path).name), samples=[t.sample_id for t in transcripts],
        hint=question_hint(transcripts), questions=sum(len(t.extra.get("qa", [])) for t in transcripts),
        session_titles={c["sample_id"]: c["title"] for t in transcripts for c in t.extra.get("sessions", [])})


@dataclass(init=False)
class BuildViews(Views):
    """The Build tab's components; a delete empties the timeline and the segment table."""

    timeline: gr.Plot = field(metadata={EMPTIED: None})
    table: gr.Dataframe = field(metadata={EMPTIED: []})
    upload: gr.File
    sample: gr.Dropdown
    dates: gr.Dropdown
    private: gr.Checkbox
    models: gr.Markdown
    build_btn: gr.Button
    live: gr.Checkbox
    summary: gr.Markdown
    download_btn: gr.Button
    download: gr.File
    download_status: gr.Markdown
    forget_confirm: gr.Checkbox
    forget_btn: gr.Button


def layout(live_wait: str) -> BuildViews:
    """The Build tab's components (inside the caller's ``gr.Tab``); ``live_wait`` says what building the
    example live takes (``BuildTab.example_wait``)."""
    ui = BuildViews()
    with gr.Row():
        ui.upload = gr.File(label="Transcript (LoCoMo, LongMemEval, a ChatGPT or Claude export: its ZIP or "
                            "conversations.json; Telegram, Discord, Messenger, Instagram or Slack JSON, OpenAI "
                            "messages, JSONL, a WhatsApp chat log or its ZIP, or text; ≤ 20 MB, a ZIP ≤ 200 MB)",
                            file_types=[".json", ".jsonl", ".txt", ".md", ".log", ".text", ".gz", ".zip"],
                            elem_id="upload")
        ui.sample = gr.Dropdown(label="Conversation (an export's are one history by default; LoCoMo's samples)",
                                choices=[], elem_id="sample-pick", allow_custom_value=True)
    with gr.Row():
        ui.dates = gr.Dropdown(label="Chat-log dates (a WhatsApp log whose every date could be 31/12 or 12/31)",
                               choices=DATE_ORDERS, value="detect", elem_id="chatlog-dates")
        ui.private = gr.Checkbox(label="Include conversations marked do-not-remember (left out by default)",
                                 value=False, elem_id="include-private")
    gr.Markdown("Without a file, **Build memory** shows the bundled LoCoMo conversation conv-26 (419 messages) at "
                f"once, from its memory prebuilt with the default models{live_wait}. Uploads are always built live; "
                "the build says how long it has left as it goes. Building another transcript replaces this session's "
                "memory; the same file grown (an export downloaded again) adds its new messages, and an edited one "
                "replaces what changed.")
    ui.models = gr.Markdown(elem_id="models-status")
    with gr.Row():
        ui.build_btn = gr.Button("Build memory", variant="primary", elem_id="build-btn", scale=3)
        ui.live = gr.Checkbox(label="Build the example live (no file)", value=False, elem_id="build-live", scale=1)
    ui.summary = gr.Markdown(elem_id="build-summary")
    ui.timeline = gr.Plot(label="φ(u_t, S_i) per message against τ_split and τ_merge", elem_id="timeline")
    with gr.Accordion("What the timeline shows", open=False):
        gr.Markdown(NOTATION_TIMELINE)
    ui.table = gr.Dataframe(headers=SEGMENT_COLUMNS, label="Topical Segments", wrap=True, max_height=400,
                            elem_id="segments",
                            column_widths=["7%", "17%", "9%", "8%", "11%", "11%", "9%", "12%", "16%"])
    with gr.Accordion("Download or restore this memory", open=False, elem_id="carry-memory"):
        gr.Markdown("**Download this memory** writes all of it (messages, segments, trajectories, facts and their "
                    "operation log, including your corrections) as one MemSIF export. Upload such a file in the "
                    "box above and **Build memory** to restore it into this session (it replaces what the session "
                    "holds).")
        ui.download_btn = gr.Button("Download this memory", size="sm", elem_id="download-btn")
        ui.download = gr.File(label="This memory as a MemSIF export", interactive=False, elem_id="download-file")
        ui.download_status = gr.Markdown(elem_id="download-status")
    with gr.Accordion("Delete this session's memory", open=False):
        gr.Markdown("Deletes every message, segment, trajectory, fact, cluster and log of this session. "
                    "It cannot be undone.")
        with gr.Row():
            ui.forget_confirm = gr.Checkbox(label="Yes, delete all of this session's memory", value=False)
            ui.forget_btn = gr.Button("Delete", size="sm", variant="stop", interactive=False, elem_id="forget-btn")
    return ui


@dataclass(frozen=True)
class MemoryFile:
    """A session's memory as one file: downloaded as a MemSIF export, and restored from one through the
    upload box (bound to the page's ``Inspector``, ``app``)."""

    app: Inspector

    def restore(self, path: str, namespace: str, settings: SessionSettings | None, previous: BuiltSource | None,
                timeline_view):
        """Restore a MemSIF export (``transfer.write_export``'s file, e.g. this page's download) into the
        session's namespace, replacing what it holds, with the export's own checks (format version,
        embedder) said when it is refused; ``timeline_view(namespace, settings)`` draws it. Yields as
        ``BuildTab.build``."""
        eng = yield from until_done(self.app.loading_engine(settings),
                                    lambda text: (namespace, previous, text, gr.skip(), gr.skip()))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                data = read_export(path)
            check_export(data, eng.embedder)
        except MemSIFError as exc:
            kept = kept_note(self.app, namespace, previous, settings)
            yield namespace, previous, f"Not restored: {escape_markdown(str(exc))}" + kept, gr.skip(), gr.skip()
            return
        source = BuiltSource(path=path, sample=None, name=readable(Path(path).name), samples=[data.namespace],
                             replaced=True)
        if eng.has_memory(namespace):
            self.app.delete_memory(namespace, "the memory was replaced by a restored one")
        eng.import_namespace(data, namespace)
        current = sum(f.fact.status == "current" for f in data.facts)
        corrections = sum(op.decided_by == "person" for op in data.fact_ops)
        notes = "".join(f" ⚠️ {escape_markdown(str(w.message))}" for w in caught)
        yield (namespace, source, f"**Restored** {code_span(source.name)} (exported from namespace "
               f"{code_span(data.namespace)}): **{len(data.messages)} messages**, {len(data.segments)} Topical "
               f"Segments, {len(data.trajectories)} Event Trajectories, {current} current CoreFacts "
               f"({corrections} corrections by a person in its log), {len(data.active_facts)} ActiveFacts.{notes}"
               + structure_health(eng, namespace) + where_it_lies(eng, namespace), *timeline_view(namespace, settings))

    def download(self, namespace: str | None, settings: SessionSettings | None,
                 source: BuiltSource | None = None) -> tuple[str | None, str]:
        """This session's memory as a MemSIF export file (``.json.gz``: messages, segments, trajectories,
        facts with their whole operation log, clusters), to download and restore later through the
        upload box, named after the chat it was built from (``download_name``). Returns (the file's path,
        what was written or why not)."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None:
            return None, "No memory yet: build one first."
        data = eng.export_namespace(namespace)
        folder = Path(tempfile.mkdtemp(prefix="memsif-download-"))
        path = write_export(data, folder / download_name(source, datetime.now()))
        return str(path), (f"{code_span(path.name)}: {len(data.messages)} messages, {len(data.facts)} CoreFacts with "
                           f"{len(data.fact_ops)} logged operations ({path.stat().st_size / 2**20:.1f} MiB). Upload it "
                           "in the box above and **Build memory** to restore it.")


def download_name(source: BuiltSource | None, now: datetime) -> str:
    """The download's file name: "memsif-<the chat's file name, and its sample>-<day>.json.gz"
    ("memsif-WhatsApp-Chat-with-Nate-2026-12-06.json.gz"), or "memsif-memory-<day>.json.gz" when the
    page does not know what the memory was built from. Only letters, digits, "-", "_" and "." are kept."""
    parts = []
    if source is not None:
        stem = Path(source.name).name
        for suffix in (".gz", ".json", ".jsonl", ".txt", ".zip"):
            stem = stem.removesuffix(suffix)
        parts = [stem, source.sample] if source.sample and source.sample not in stem else [stem]
    name = "-".join(re.sub(r"[^\w.-]+", "-", p).strip("-.") for p in parts if p.strip())
    return f"memsif-{name[:80].strip('-.') or 'memory'}-{now:%Y-%m-%d}.json.gz"


@dataclass(frozen=True)
class BuildTab:
    """The Build tab's handlers, bound to the page's ``Inspector`` (``app``)."""

    app: Inspector
    title = "Build"

    def timeline_view(self, namespace: str | None, settings: SessionSettings | None = None,
                      source: BuiltSource | None = None):
        """φ timeline figure and the Topical Segment table of this session's memory (sessions named by
        the conversation titles of the build's ``source``, where an export gave them)."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None:
            return None, []
        decisions, segments, method = eng.decisions(namespace, "segment"), eng.segments(namespace), eng.config.method
        return (phi_timeline(decisions, eng.messages(namespace), method.tau_split, method.tau_merge, segments),
                segment_rows(segments, decisions, source.session_titles if source else None))

    def prebuilt_for(self, eng, settings: SessionSettings | None) -> NamespaceExport | None:
        """The prebuilt example memory when it shows what this engine would build: its provenance records
        this engine's content fingerprint (the LLM's weights, the embedder, the settings that decide what is
        stored; ``memsif.transfer.content_fingerprint``, whatever the back-end or display name) and no
        session setting differs from the defaults; else None (built live)."""
        data = self.app.example()
        if data is None or self.app.settings_in_force(settings):
            return None
        return data if data.embedder == eng.embedder.name and same_content(data.provenance, eng.config) else None

    def example_wait(self) -> str:
        """"; built live it takes about 10–25 min to its timeline and …" (its structure, its CoreFacts, the model's
        segment titles where the example's build timed them) for the bundled example, estimated
        from the pace the page knows (``PACE``: this server's, else the prebuilt example's own build, whose
        provenance sets the prior here); "" when neither is known."""
        data, facts = self.app.example(), self.app.config.facts
        if data is not None:
            self.app.pace.set_prior(data.provenance, facts.fact_batch_messages)
        messages, segments = (len(data.messages), len(data.segments)) if data is not None else (0, 0)
        parts, bases = [], []
        for kind, units, what in ((STRUCTURE, messages, "to its timeline"),
                                  (FACTS, math.ceil(messages / facts.fact_batch_messages), "more for its CoreFacts"),
                                  (TITLES, segments, "more for the model's segment titles")):
            countdown = self.app.pace.countdown(kind, wave=1 if kind == STRUCTURE else facts.fact_parallel)
            countdown.update(0, units)
            if (span := countdown.left()) is not None:
                parts.append(f"about {span_text(span)} {what}")
                bases.append(countdown.basis())
        if not parts:
            return ""
        machine = data.provenance.get("machine", "?") if data is not None else "?"
        said = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
        return f"; built live it takes {said} ({' / '.join(dict.fromkeys(bases))}, on {machine})"

    @guard
    def build(self, file, sample: str | None, namespace: str | None, settings: SessionSettings | None,
              previous: BuiltSource | None = None, live: bool = False, dates: str = "detect", private: bool = False,
              progress=gr.Progress()):  # noqa: B008
        """Build Structured Interaction Memory (Topical Segments, Event Trajectories) from the uploaded
        transcript, streaming counts as it goes. Without a file the bundled LoCoMo example is loaded from
        its prebuilt memory in seconds (``EXAMPLE_MEMORY``; built live with ``live``, with session settings
        or another model). Building another transcript than the session's last one replaces the session's
        memory; the same one again adds nothing. CoreFacts follow in ``build_facts`` (the UI chains it).
        API clients without a browser session get a fresh namespace; ``dates`` and ``private`` as ``load_upload``.
        Yields (namespace, source, summary, timeline figure, segment rows)."""
        namespace = namespace or new_session()
        if file is not None and is_export(path := checked_path(file)):
            yield from MemoryFile(self.app).restore(path, namespace, settings, previous, self.timeline_view)
            return
        try:
            transcripts, source = read_source(file, None if sample == ALL_CONVERSATIONS else sample, dates, private)
        except (UploadRefused, gr.Error) as exc:  # one message in the page; the views and memory stay
            kept = kept_note(self.app, namespace, previous, settings)
            yield namespace, previous, str(exc) + kept, gr.skip(), gr.skip()
            return
        count = sum(len(t.messages) for t in transcripts)  # said at once: no summary of another memory stays
        yield namespace, previous, f"⏳ Building {count} messages from {code_span(source.name)}…", gr.skip(), gr.skip()
        eng = yield from until_done(self.app.loading_engine(settings),  # the first click after a start waits for them
                                    lambda text: (namespace, previous, text, gr.skip(), gr.skip()))
        prebuilt = self.prebuilt_for(eng, settings) if file is None and not live else None
        if prebuilt is not None:
            source.prebuilt = True
            summary = (load_prebuilt(self.app, eng, namespace, prebuilt, previous, source)
                       + structure_health(eng, namespace) + where_it_lies(eng, namespace))
            yield namespace, source, summary, *self.timeline_view(namespace, settings)
            return
        yield from self._build_live(eng, namespace, transcripts, source, previous, settings, progress)

    @guard
    def rebuild(self, namespace: str | None, source: BuiltSource | None, settings: SessionSettings | None,
                progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
        """Delete this session's memory and build it again from the last transcript with the session's new
        settings (the Settings tab's Apply). Yields as ``build``."""
        if not source:
            yield namespace, source, "Nothing to rebuild yet: build memory in the Build tab.", gr.skip(), gr.skip()
            return
        if namespace:
            self.app.delete_memory(namespace, "the memory is being rebuilt with new settings")
        yield from self.build(source.path, source.sample, namespace, settings, None, live=True, progress=progress)

    def download(self, namespace: str | None, settings: SessionSettings | None,
                 source: BuiltSource | None = None) -> tuple[str | None, str]:
        """``MemoryFile.download`` (the page's handler)."""
        return MemoryFile(self.app).download(namespace, settings, source)

    def _build_live(self, eng, namespace: str, transcripts: list, source: BuiltSource, previous: BuiltSource | None,
                    settings: SessionSettings | None, progress: gr.Progress):
        """``build`` of a transcript, live: replaces a memory of another transcript, runs the ingest in
        the background with its progress in the summary, then the summary of what was built (or why it
        stopped). Yields as ``build`` does."""
        replaced = ""
        if previous and (previous.name, previous.samples, previous.prebuilt) != (source.name, source.samples, False) \
                and eng.has_memory(namespace):
            self.app.delete_memory(namespace, f"the memory was replaced by a build of {code_span(source.name)}")
            source.replaced = True
            replaced = f" (replaced the memory of {code_span(previous.name)})"
        total = sum(len(t.messages) for t in transcripts)

        def work(report):
            reports = []
            with job(namespace, "structure"):  # cancellable from its start (a Delete meanwhile stops it)
                for t in transcripts:
                    try:
                        reports.append(eng.ingest_transcript(t, namespace, report, core_facts=False))
                    except SourceConflict:  # the same file edited: the page replaces the memory, saying what changed
                        reports.append(eng.ingest_transcript(t, namespace, report, core_facts=False, replace=True))
            return reports

        countdown = self.app.pace.countdown(STRUCTURE, paused=lambda: waited(namespace),
                                            work=lambda: eng.workload(namespace))  # counted in judge calls once known
        countdown.update(0, total)
        placed = JobProgress()

        def describe(state: JobProgress, seconds: float) -> str:
            nonlocal placed
            placed = state
            if state.stage == "starting":
                return (f"Loading models and reading {total} messages… {seconds:.0f} s{left_text(countdown)}"
                        f"{model_share(namespace)}")
            countdown.update(state.done, state.total)
            return (f"Building Structured Interaction Memory: {state.stage} — {state.done} of "
                    f"{state.total} new messages placed · {seconds:.0f} s{left_text(countdown)}"
                    f"{model_share(namespace)}")

        source.building = source.replaced or not eng.has_memory(namespace)  # begun anew: every tab shows it (demo)
        try:
            growing = redrawn(lambda: self.timeline_view(namespace, settings, source), lambda: placed.done > 0,
                              source.building)
            for (kind, value), views in zip(in_background(work, progress, describe), growing, strict=False):
                if kind == "status":
                    yield namespace, source, value, *views
                else:
                    reports = value
                    countdown.finish()
        except MemSIFError as exc:  # said in the summary, with the memory that exists; no stale progress
            source.failed, source.building = str(exc), False
            yield (namespace, source, stopped_summary(eng, namespace, exc),
                   *self.timeline_view(namespace, settings, source))
            return
        source.building = False
        summary = self.built_summary(eng, namespace, transcripts, reports, source, replaced, settings)
        yield namespace, source, summary, *self.timeline_view(namespace, settings, source)

    def built_summary(self, eng, namespace: str, transcripts: list, reports: list, source: BuiltSource, replaced: str,
                      settings: SessionSettings | None) -> str:
        """What a live build made (counts, judge calls, seconds), the structure's health, the settings in
        force and the first warnings of the files and the ingest."""
        report = reports[-1]
        summary = (f"**{report.total_messages} messages** → **{report.segments} Topical Segments**, "
                   f"**{report.trajectories} Event Trajectories** ({threads(eng.trajectories(namespace))}) "
                   f"from {code_span(source.name)} "
                   f"({_contents(transcripts)}){replaced}. Segment judge on "
                   f"{sum(r.judge_calls_segment for r in reports)} of {sum(r.messages for r in reports)} new messages; "
                   f"trajectory judge {sum(r.judge_calls_trajectory for r in reports)} calls; "
                   f"{sum(r.seconds for r in reports):.1f} s. CoreFacts are filled in next (CoreFacts tab).")
        summary += structure_health(eng, namespace) + where_it_lies(eng, namespace)
        if notes := sorted({r.trajectory_note for r in reports if r.trajectory_note}):
            summary += "\n\n" + "\n".join(f"ℹ️ Event Trajectories: {escape_markdown(n)}" for n in notes)
        summary += "".join(f"\n\n{said}" for said in (runtime_of(eng.llm).warning(),
                                                        self.app.settings_in_force(settings)) if said)
        warnings = [w for t in transcripts for w in t.warnings] + [w for r in reports for w in r.warnings]
        if warnings:
            summary += "\n\n" + "\n".join(f"⚠️ {escape_markdown(w)}" for w in warnings[:5]) + (
                f"\n\n…and {len(warnings) - 5} more." if len(warnings) > 5 else "")
        return summary

    def forget_handler(self, b: BuildViews, emptied: dict):
        """The Delete button's handler; ``emptied`` maps every view of the page to what a delete empties it to
        (each tab's ``Views.emptied``)."""
        def forget(namespace: str | None, confirmed: bool = False) -> dict:
            """Delete this session's whole memory (messages, segments, trajectories, facts, clusters, logs)
            from the store, only with ``confirmed``; every view empties and the confirmation resets.
            Returns the build summary, every view's empty value, the confirmation box and the delete button."""
            if not confirmed:
                return {b.summary: "Nothing was deleted: tick the confirmation first."}
            if namespace:
                self.app.delete_memory(namespace)
            return {b.summary: "This session's memory was deleted.", **emptied,
                    b.forget_confirm: gr.Checkbox(value=False), b.forget_btn: gr.Button(interactive=False)}
        return forget

    def layout(self) -> BuildViews:
        """The Build tab's components (``layout``), with what building the example live takes."""
        return layout(self.example_wait())

    def wire(self, page: Page) -> None:
        """The Build tab's own events: the sample list of an upload, the timeline when the tab is shown,
        and the delete's confirmation (the build and the delete, which reach every tab: ``demo``)."""
        b, per_session = page[BuildViews], [page.namespace, page.settings]
        b.forget_confirm.change(lambda ok: gr.Button(interactive=bool(ok)), inputs=b.forget_confirm,
                                outputs=b.forget_btn, api_name=False)
        b.upload.change(list_samples, inputs=b.upload, outputs=[b.sample, b.summary], api_name="samples")
        b.download_btn.click(self.download, inputs=[*per_session, page.source], outputs=[b.download, b.download_status],
                             api_name="download")
        for trigger, api_name in ((b.tab.select, False), (gr.Button(visible=False).click, "timeline")):
            trigger(self.timeline_view, inputs=[*per_session, page.source], outputs=[b.timeline, b.table],
                    api_name=api_name)
