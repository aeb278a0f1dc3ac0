"""Build tab: upload a transcript (or take the bundled LoCoMo conversation), build Structured
Interaction Memory with live progress, and read it on the φ timeline and the Topical Segment
table (§3.2); delete the session's memory."""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from memsif.errors import MemSIFError, SourceConflict
from memsif.inspector.common import (
    JobProgress,
    delete_memory,
    engine,
    engine_for,
    guard,
    in_background,
    model_share,
    new_session,
    session_engine,
    settings_in_force,
)
from memsif.io import as_memories, load_transcripts
from memsif.io.transcripts import HISTORY_FORMATS
from memsif.records import BoundaryRule, SegmentDecision
from memsif.timeparse import day_text
from memsif.viz import SEGMENT_COLUMNS, phi_timeline, segment_rows

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "locomo-conv-26.json"
MAX_UPLOAD_BYTES = 20 * 1024 * 1024

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
ACCEPTED = ("Accepted: LoCoMo or LongMemEval JSON, a ChatGPT or Claude export's `conversations.json`, an OpenAI "
            "message list, JSONL (`{\"speaker\", \"text\", \"time\"}` per line) or plain text (`Speaker: text` "
            "lines, `## date` headers), up to 20 MB.")


class UploadRefused(Exception):
    """An upload that cannot be read: ``str()`` is the one message the page shows."""


def load_upload(path: str, sample: str | None = None) -> list:
    """The transcripts of an uploaded file, or :class:`UploadRefused` with one message that names the
    file as the user knows it (not Gradio's temporary folder), says what it looks like and what is
    accepted."""
    try:
        return load_transcripts(path, sample=sample or None)
    except MemSIFError as exc:
        said = str(exc).replace(str(Path(path).parent) + "/", "").replace(f"file {Path(path).name}: ", "", 1)
        raise UploadRefused(f"⚠️ **{Path(path).name}** was not loaded: {said}\n\n{ACCEPTED} Nothing was changed: "
                            "this session's memory and views are as they were.") from exc


def checked_path(file) -> str:
    """The uploaded file's path. Raises gr.Error: the file is over 20 MB."""
    path = file if isinstance(file, str) else file.name
    if os.path.getsize(path) > MAX_UPLOAD_BYTES:
        raise gr.Error(f"The file is larger than {MAX_UPLOAD_BYTES // 2**20} MB; split it and upload the parts.")
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
    ids = [t.sample_id for t in transcripts]
    return [(i, i) for i in ids], ids[0] if ids else None


def list_samples(file):
    """The Sample box for an uploaded transcript file (an export's conversations by title and date,
    LoCoMo's and LongMemEval's sample ids), and the page's one message when the file cannot be read.
    Returns (sample dropdown, build summary)."""
    if file is None:
        return gr.Dropdown(choices=[], value=None), gr.skip()
    try:
        choices, value = sample_choices(load_upload(checked_path(file)))
    except (UploadRefused, gr.Error) as exc:
        return gr.Dropdown(choices=[], value=None), str(exc)
    return gr.Dropdown(choices=choices, value=value), gr.skip()


def timeline_view(namespace: str | None, settings: dict | None = None):
    """φ timeline figure and the Topical Segment table of this session's memory."""
    eng = session_engine(namespace, settings)
    if eng is None:
        return None, []
    decisions = eng.decisions(namespace, "segment")
    messages = eng.messages(namespace)
    fig = phi_timeline(decisions, messages, eng.config.tau_split, eng.config.tau_merge)
    return fig, segment_rows(eng.segments(namespace), decisions)


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


def _kept(namespace: str, previous: dict | None, settings: dict | None) -> str:
    """What the session's memory still holds after a refused upload (the refusal replaces the build
    summary on the page, so it says what stayed)."""
    eng = session_engine(namespace, settings)
    if eng is None or not previous:
        return ""
    return (f" It holds {len(eng.messages(namespace))} messages in {len(eng.segments(namespace))} Topical "
            f"Segments, from `{previous.get('name', 'the last build')}`.")


def _contents(transcripts: list) -> str:
    """What was built, for the summary: sample ids, or an export's conversation titles."""
    parts = []
    for t in transcripts:
        sessions = t.extra.get("sessions")
        parts.append(f"{len(sessions)} conversation{'s' if len(sessions) != 1 else ''}: "
                     + ", ".join(s["title"] for s in sessions) if sessions else t.sample_id)
    return "; ".join(parts)


#: A build is degenerate when more than this share of its Topical Segments hold one message …
SINGLE_SEGMENT_WARN = 0.5
#: … or when at least ``JUDGE_MIN_VERDICTS`` judge verdicts go one way this often.
JUDGE_ONE_WAY_WARN = 0.95
JUDGE_MIN_VERDICTS = 10


def structure_health(eng, namespace: str) -> str:
    """One line under every build: the share of single-message Topical Segments, the judge's verdict
    split and the share of messages it decided; a warning with its reason when the structure is
    degenerate (thresholds ``SINGLE_SEGMENT_WARN``, ``JUDGE_ONE_WAY_WARN``)."""
    segments = eng.segments(namespace)
    messages = sum(len(s.message_ids) for s in segments)
    single = sum(1 for s in segments if len(s.message_ids) == 1)
    judged = [d.continued for d in eng.decisions(namespace, "segment")
              if isinstance(d, SegmentDecision) and d.rule == BoundaryRule.JUDGE]
    kept = sum(judged)
    single_share = single / len(segments) if segments else 0.0
    line = (f"\n\n**Structure health**: {single} of {len(segments)} Topical Segments hold one message "
            f"({single_share:.0%}); the judge decided {len(judged)} of {messages} messages "
            f"({len(judged) / max(messages, 1):.0%}): {kept} continue, {len(judged) - kept} split.")
    reasons = []
    if len(segments) >= 5 and single_share > SINGLE_SEGMENT_WARN:
        reasons.append(f"more than {SINGLE_SEGMENT_WARN:.0%} of the segments are single messages")
    one_way = max(kept, len(judged) - kept) / len(judged) if judged else 0.0
    if len(judged) >= JUDGE_MIN_VERDICTS and one_way >= JUDGE_ONE_WAY_WARN:
        way = "a continuation" if kept >= len(judged) - kept else "a split"
        reasons.append(f"{one_way:.0%} of the judge's verdicts were {way} (warned at {JUDGE_ONE_WAY_WARN:.0%})")
    if reasons:
        line += (f"\n\n⚠️ The structure looks degenerate: {'; '.join(reasons)}. The judge "
                 f"({getattr(eng.llm, 'name', 'the configured model')}) may not tell topics apart, or the "
                 "thresholds do not suit this conversation: the packaged 135M model is near chance (segment-judge AUC "
                 "0.55); the default 1.5B separates topics at AUC 0.86 (README, Models). Try the default model, "
                 "or τ_split and τ_merge in Settings.")
    return line


@guard
def build(file, sample: str | None, namespace: str | None, settings: dict | None, previous: dict | None = None,
          progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
    """Build Structured Interaction Memory (Topical Segments, Event Trajectories) from the uploaded
    transcript, or the bundled LoCoMo example when none is given, streaming counts as it goes.
    Building another transcript than the session's last one replaces the session's memory; the
    same one again adds nothing. CoreFacts follow in ``build_facts`` (the UI chains it). API clients
    without a browser session get a fresh namespace.
    Yields (namespace, source, summary, timeline figure, segment rows)."""
    namespace = namespace or new_session()
    sample = None if sample == ALL_CONVERSATIONS else sample
    try:
        path = checked_path(file) if file is not None else str(EXAMPLE)
        transcripts = as_memories(load_upload(path, sample))
    except (UploadRefused, gr.Error) as exc:  # one message in the page; the views and memory stay
        yield namespace, previous, str(exc) + _kept(namespace, previous, settings), gr.skip(), gr.skip()
        return
    source = {"path": path, "sample": sample or None, "name": Path(path).name,
              "samples": [t.sample_id for t in transcripts], "hint": question_hint(transcripts),
              "questions": sum(len(t.extra.get("qa", [])) for t in transcripts)}
    eng = engine_for(settings)
    replaced = ""
    if previous and (previous.get("name"), previous.get("samples")) != (source["name"], source["samples"]) \
            and eng.has_memory(namespace):
        delete_memory(eng, namespace)
        replaced = f" (replaced the memory of `{previous['name']}`)"
    total = sum(len(t.messages) for t in transcripts)

    def work(report):
        reports = []
        for t in transcripts:
            try:
                reports.append(eng.ingest_transcript(t, namespace, report, core_facts=False))
            except SourceConflict:  # the same file edited: the page replaces the memory, saying what changed
                reports.append(eng.ingest_transcript(t, namespace, report, core_facts=False, replace=True))
        return reports

    def describe(state: JobProgress, seconds: float) -> str:
        if state.stage == "starting":
            return f"Loading models and reading {total} messages… {seconds:.0f} s{model_share(namespace)}"
        return (f"Building Structured Interaction Memory: {state.stage} — {state.done} of "
                f"{state.total} new messages placed · {seconds:.0f} s{model_share(namespace)}")

    for kind, value in in_background(work, progress, describe):
        if kind == "status":
            yield namespace, source, value, gr.skip(), gr.skip()
        else:
            reports = value
    report = reports[-1]
    fig, rows = timeline_view(namespace, settings)
    summary = (f"**{report.total_messages} messages** → **{report.segments} Topical Segments**, "
               f"**{report.trajectories} Event Trajectories** from `{source['name']}` "
               f"({_contents(transcripts)}){replaced}. Segment judge on "
               f"{sum(r.judge_calls_segment for r in reports)} of {sum(r.messages for r in reports)} new messages; "
               f"trajectory judge {sum(r.judge_calls_trajectory for r in reports)} calls; "
               f"{sum(r.seconds for r in reports):.1f} s. CoreFacts are filled in next (CoreFacts tab).")
    summary += structure_health(eng, namespace)
    if in_force := settings_in_force(settings):
        summary += f"\n\n{in_force}"
    warnings = [w for t in transcripts for w in t.warnings] + [w for r in reports for w in r.warnings]
    if warnings:
        summary += "\n\n" + "\n".join(f"⚠️ {w}" for w in warnings[:5]) + (
            f"\n\n…and {len(warnings) - 5} more." if len(warnings) > 5 else "")
    yield namespace, source, summary, fig, rows


def forget(namespace: str | None, confirmed: bool = False):
    """Delete this session's whole memory (messages, segments, trajectories, facts, clusters, logs)
    from the store, only with ``confirmed``; every view empties and the confirmation resets.
    Returns (summary, then one empty value per view of ``VIEWS_EMPTY``, the confirmation box, the
    delete button)."""
    if not confirmed:
        return ("Nothing was deleted: tick the confirmation first.", *[gr.skip()] * len(VIEWS_EMPTY),
                gr.skip(), gr.skip())
    if namespace:
        delete_memory(engine(), namespace)
    return ("This session's memory was deleted.", *VIEWS_EMPTY, gr.Checkbox(value=False),
            gr.Button(interactive=False))


#: What every view shows after a delete, in the order ``build_demo`` lists them: timeline, segments,
#: source, chat, trace, message picker, message context, its plot, trajectory graph, swimlanes,
#: trajectory picker, trajectory table, CoreFacts status, facts, fact sources, log, clusters plot,
#: clusters, cluster sources, evaluation summary, plot, table and kept rows.
VIEWS_EMPTY = (None, [], None, [], None, gr.Dropdown(choices=[], value=None, interactive=False), "", None,
               None, None, gr.Dropdown(choices=[], value=None), [],
               "CoreFacts are extracted after Structured Interaction Memory is built.", [], [], [], None, [], [],
               "", None, [], None)


def layout() -> SimpleNamespace:
    """The Build tab's components (inside the caller's ``gr.Tab``)."""
    ui = SimpleNamespace()
    with gr.Row():
        ui.upload = gr.File(label="Transcript (LoCoMo, LongMemEval, a ChatGPT or Claude export's conversations.json, "
                            "OpenAI messages, JSONL or text; ≤ 20 MB)",
                            file_types=[".json", ".jsonl", ".txt", ".md", ".log", ".text"])
        ui.sample = gr.Dropdown(label="Conversation (an export's are one history by default; LoCoMo's samples)",
                                choices=[], elem_id="sample-pick",
                                allow_custom_value=True)
    gr.Markdown("Without a file, **Build memory** uses the bundled LoCoMo conversation conv-26 (419 messages: "
                "its timeline in about five minutes on 2 CPU cores with the default 1.5B model, its CoreFacts "
                "about ten minutes more). Building another transcript replaces this session's memory; the same file "
                "grown (an export downloaded again) adds its new messages, and an edited one replaces what changed.")
    ui.build_btn = gr.Button("Build memory", variant="primary", elem_id="build-btn")
    ui.summary = gr.Markdown(elem_id="build-summary")
    ui.timeline = gr.Plot(label="φ(u_t, S_i) per message against τ_split and τ_merge", elem_id="timeline")
    with gr.Accordion("What the timeline shows", open=False):
        gr.Markdown(NOTATION_TIMELINE)
    ui.table = gr.Dataframe(headers=SEGMENT_COLUMNS, label="Topical Segments", wrap=True, max_height=400,
                            column_widths=["8%", "9%", "9%", "7%", "7%", "12%", "18%", "30%"])
    with gr.Accordion("Delete this session's memory", open=False):
        gr.Markdown("Deletes every message, segment, trajectory, fact, cluster and log of this session. "
                    "It cannot be undone.")
        with gr.Row():
            ui.forget_confirm = gr.Checkbox(label="Yes, delete all of this session's memory", value=False)
            ui.forget_btn = gr.Button("Delete", size="sm", variant="stop", interactive=False, elem_id="forget-btn")
    return ui
