"""MemSIF inspector (Gradio): chat with long-term memory and see how it is built.

Run: ``python app.py`` (offline, packaged default models; http://127.0.0.1:7860). Tabs: Build (upload
or bundled example → φ timeline and Topical Segments), Chat (answers with their trace; turns can be
written into memory), Trajectories, CoreFacts (with the operation log), ActiveFacts (clusters against
θ_s/θ_q), Settings (α, τ_split, τ_merge, Top-K, θ_s, θ_q, model; rebuild).

Each browser session gets its own memory namespace, made on the server; every view is a named API
endpoint (``gradio_client``: ``/build``, ``/build_facts``, ``/ask``, ``/timeline``, ``/trajectories``,
``/trajectory``, ``/facts``, ``/clusters``, ``/settings`` then ``/rebuild``, ``/samples``, ``/forget``).
"""

from __future__ import annotations

import inspect
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import gradio as gr

from memsif.config import LLM_BACKENDS, MemSIFConfig
from memsif.engine import MemSIF
from memsif.errors import MemSIFError
from memsif.io import load_transcripts
from memsif.locks import queue_position, sharing
from memsif.records import Message
from memsif.viz import (
    FACT_COLUMNS,
    OP_COLUMNS,
    SEGMENT_COLUMNS,
    TRAJECTORY_DETAIL_COLUMNS,
    answer_markdown,
    cluster_scatter,
    fact_rows,
    message_rows,
    op_rows,
    phi_timeline,
    segment_rows,
    trace_markdown,
    trajectory_detail_rows,
    trajectory_graph,
    trajectory_swimlanes,
)

EXAMPLE = Path(__file__).resolve().parent / "assets" / "locomo-conv-26.json"
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
CLUSTER_COLUMNS = ["cluster", "subject (speaker: topic)", "statement", "Score_src", "Score_qry", "|R|", "queries",
                   "ActiveFact", "sources"]
MESSAGE_COLUMNS = ["message", "session", "time", "speaker", "text"]
#: Set to 1 on a public Space: a session's memory is deleted when its browser tab closes.
FORGET_SESSIONS = os.environ.get("MEMSIF_APP_FORGET_SESSIONS", "0") == "1"

_engine: MemSIF | None = None
_engine_lock = threading.Lock()
_derived: dict[tuple, MemSIF] = {}


# --------------------------------------------------------------------------- engine and settings
def engine() -> MemSIF:
    """The process's one engine (embedded Qdrant locks its folder), created on first use."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = MemSIF(MemSIFConfig.from_env())
            _engine.load_models()
        return _engine


def model_choices() -> list[str]:
    """"backend:model" entries the Settings tab offers: the configured model, plus MEMSIF_APP_MODELS
    (comma-separated, e.g. ``transformers:Qwen/Qwen3-4B,openai:qwen3``)."""
    cfg = MemSIFConfig.from_env()
    extra = [m.strip() for m in os.environ.get("MEMSIF_APP_MODELS", "").split(",") if m.strip()]
    return list(dict.fromkeys([f"{cfg.llm_backend}:{cfg.llm_model}", *extra]))


def _settings_config(base: MemSIFConfig, settings: dict[str, Any]) -> MemSIFConfig:
    changes = {k: v for k, v in settings.items() if k != "model"}
    if "alpha" in changes:  # one α for segments and trajectories, as in the paper (Table 13)
        alpha = changes.pop("alpha")
        changes.update(alpha_segment=alpha, alpha_trajectory=alpha)
    if settings.get("model"):
        backend, _, model = settings["model"].partition(":")
        if backend not in LLM_BACKENDS or not model:
            raise gr.Error(f"Model choice {settings['model']!r} is not 'backend:model' with backend in {LLM_BACKENDS}.")
        if backend != base.llm_backend or model != base.llm_model:
            changes.update(llm_backend=backend, llm_model=model, llm_gguf_file="")
    return base.replace(**changes)


def engine_for(settings: dict[str, Any] | None) -> MemSIF:
    """The engine with this session's settings: the shared one, or a derived one over the same store."""
    base = engine()
    if not settings:
        return base
    key = tuple(sorted(settings.items()))
    with _engine_lock:
        if key not in _derived:
            try:
                _derived[key] = base.with_config(_settings_config(base.config, settings))
            except MemSIFError as exc:
                raise gr.Error(str(exc)) from exc
        return _derived[key]


def new_session() -> str:
    """A namespace for this browser session, made on the server (never taken from the client)."""
    return "ui-" + uuid.uuid4().hex[:12]


def _forget(namespace: str | None) -> None:
    if namespace and _engine is not None:
        _engine.delete_namespace(namespace)


def _guard(fn):
    """Engine errors become a visible Gradio error that says what to do."""
    def wrapped(*args, **kwargs):  # for generator handlers (streaming)
        try:
            return (yield from fn(*args, **kwargs))
        except MemSIFError as exc:
            raise gr.Error(str(exc)) from exc

    def plain(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemSIFError as exc:
            raise gr.Error(str(exc)) from exc

    chosen = wrapped if inspect.isgeneratorfunction(fn) else plain
    chosen.__name__, chosen.__doc__ = fn.__name__, fn.__doc__
    chosen.__signature__ = inspect.signature(fn)  # Gradio reads gr.Progress defaults from it
    return chosen


def _in_background(work: Callable[[Callable[[int, int, str], None]], Any], progress: gr.Progress,
                   describe: Callable[[dict[str, Any], float], str]) -> Iterator[tuple[str, Any]]:
    """Run ``work(progress_callback)`` in a thread; yield ("status", text) every half second while it
    runs, then ("done", result). Engine errors are raised here, in the caller's thread."""
    state: dict[str, Any] = {"done": 0, "total": 0, "stage": "starting"}
    out: dict[str, Any] = {}

    def report(done: int, total: int, stage: str) -> None:
        state.update(done=done, total=total, stage=stage)

    def run() -> None:
        try:
            out["result"] = work(report)
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    start = time.perf_counter()
    thread.start()
    while thread.is_alive():
        thread.join(0.5)
        total = state["total"] or 1
        progress(state["done"] / total, desc=f"{state['stage']} {state['done']}/{state['total']}")
        yield "status", describe(state, time.perf_counter() - start)
    if "error" in out:
        raise out["error"]
    yield "done", out["result"]


def _model_share(namespace: str) -> str:
    """What this session's job waits for on the shared model, or with how many others it shares it."""
    waiting = queue_position(namespace)
    if waiting:
        return f" · ⏳ {waiting}"
    others = sharing(namespace)
    return f" · the model is shared with {others} other job(s), call by call" if others else ""


# --------------------------------------------------------------------------- Build
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

NOTATION_ACTIVE = """
- A **candidate cluster C_k** gathers the evidence statements (X_k) that answered questions (Q_k) about one
  speaker's topic (**subject** = speaker: its two most frequent key entities); **|R|** counts the distinct source
  messages R_k of those statements.
- **Score_src** (Eq. 2) = (1 − 1/|R|) · coherence of X_k: supported by several sources that agree.
  **Score_qry** (Eq. 3) = (1 − 1/|Q|) · coherence of Q_k: asked for repeatedly.
- A cluster past **θ_s** (vertical line) and **θ_q** (horizontal line) is promoted to an **ActiveFact** (a star);
  its statement is the most central of X_k and stays until another is clearly more central.
"""

#: What the upload takes, said with every refusal.
ACCEPTED = ("Accepted: LoCoMo or LongMemEval JSON, a ChatGPT or Claude export's `conversations.json`, an OpenAI "
            "message list, JSONL (`{\"speaker\", \"text\", \"time\"}` per line) or plain text (`Speaker: text` "
            "lines, `## date` headers), up to 20 MB.")


class UploadRefused(Exception):
    """An upload that cannot be read: ``str()`` is the one message the page shows."""


def _load_upload(path: str, sample: str | None = None) -> list:
    """The transcripts of an uploaded file, or :class:`UploadRefused` with one message that names the
    file as the user knows it (not Gradio's temporary folder), says what it looks like and what is
    accepted."""
    try:
        return load_transcripts(path, sample=sample or None)
    except MemSIFError as exc:
        said = str(exc).replace(str(Path(path).parent) + "/", "")
        raise UploadRefused(f"⚠️ **{Path(path).name}** was not loaded: {said}\n\n{ACCEPTED} Nothing was changed: "
                            "this session's memory and views are as they were.") from exc


def list_samples(file):
    """Sample ids in an uploaded transcript file (LoCoMo and LongMemEval files hold several), and the
    page's one message when the file cannot be read. Returns (sample dropdown, build summary)."""
    if file is None:
        return gr.Dropdown(choices=[], value=None), gr.skip()
    try:
        samples = [t.sample_id for t in _load_upload(_checked_path(file))]
    except (UploadRefused, gr.Error) as exc:
        return gr.Dropdown(choices=[], value=None), str(exc)
    return gr.Dropdown(choices=samples, value=samples[0] if samples else None), gr.skip()


def _checked_path(file) -> str:
    path = file if isinstance(file, str) else file.name
    if os.path.getsize(path) > MAX_UPLOAD_BYTES:
        raise gr.Error(f"The file is larger than {MAX_UPLOAD_BYTES // 2**20} MB; split it and upload the parts.")
    return path


def timeline_view(namespace: str | None, settings: dict | None = None):
    """φ timeline figure and the Topical Segment table of this session's memory."""
    eng = engine_for(settings)
    if not namespace or not eng.has_memory(namespace):
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


@_guard
def build(file, sample: str | None, namespace: str | None, settings: dict | None, previous: dict | None = None,
          progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
    """Build Structured Interaction Memory (Topical Segments, Event Trajectories) from the uploaded
    transcript, or the bundled LoCoMo example when none is given, streaming counts as it goes.
    Building another transcript than the session's last one replaces the session's memory; the
    same one again adds nothing. CoreFacts follow in ``build_facts`` (the UI chains it). API clients
    without a browser session get a fresh namespace.
    Yields (namespace, source, summary, timeline figure, segment rows)."""
    namespace = namespace or new_session()
    try:
        path = _checked_path(file) if file is not None else str(EXAMPLE)
        transcripts = _load_upload(path, sample)
    except (UploadRefused, gr.Error) as exc:  # one message in the page; the views and memory stay
        yield namespace, previous, str(exc), gr.skip(), gr.skip()
        return
    source = {"path": path, "sample": sample or None, "name": Path(path).name,
              "samples": [t.sample_id for t in transcripts], "hint": question_hint(transcripts)}
    eng = engine_for(settings)
    replaced = ""
    if previous and (previous.get("name"), previous.get("samples")) != (source["name"], source["samples"]) \
            and eng.has_memory(namespace):
        eng.delete_namespace(namespace)
        replaced = f" (replaced the memory of `{previous['name']}`)"
    total = sum(len(t.messages) for t in transcripts)

    def work(report):
        return [eng.ingest(t.messages, namespace=namespace, core_facts=False, progress=report) for t in transcripts]

    def describe(state, seconds):
        if state["stage"] == "starting":
            return f"Loading models and reading {total} messages… {seconds:.0f} s{_model_share(namespace)}"
        return (f"Building Structured Interaction Memory: {state['stage']} — {state['done']} of "
                f"{state['total']} new messages placed · {seconds:.0f} s{_model_share(namespace)}")

    for kind, value in _in_background(work, progress, describe):
        if kind == "status":
            yield namespace, source, value, gr.skip(), gr.skip()
        else:
            reports = value
    report = reports[-1]
    fig, rows = timeline_view(namespace, settings)
    summary = (f"**{report.total_messages} messages** → **{report.segments} Topical Segments**, "
               f"**{report.trajectories} Event Trajectories** from `{source['name']}` "
               f"({', '.join(source['samples'])}){replaced}. Segment judge on "
               f"{sum(r.judge_calls_segment for r in reports)} of {sum(r.messages for r in reports)} new messages; "
               f"trajectory judge {sum(r.judge_calls_trajectory for r in reports)} calls; "
               f"{sum(r.seconds for r in reports):.1f} s. CoreFacts are filled in next (CoreFacts tab).")
    judged = [d["continued"] for d in eng.decisions(namespace, "segment") if d.get("rule") == "judge"]
    if len(judged) >= 5 and len(set(judged)) == 1:
        summary += (f"\n\n⚠️ Every one of the {len(judged)} messages the judge decided was "
                    f"{'a continuation' if judged[0] else 'a split'}: the judge "
                    f"({getattr(eng.llm, 'name', 'the configured model')}) does not tell topics apart. The packaged "
                    "135M model separates same-topic from other-topic pairs at AUC 0.53 (chance 0.5; judge-check "
                    "separation 0.54), so the segments are set by φ and the thresholds; configure a bigger model "
                    "(Settings, or MEMSIF_LLM_MODEL) for real judgements.")
    warnings = [w for t in transcripts for w in t.warnings] + [w for r in reports for w in r.warnings]
    if warnings:
        summary += "\n\n" + "\n".join(f"⚠️ {w}" for w in warnings[:5]) + (
            f"\n\n…and {len(warnings) - 5} more." if len(warnings) > 5 else "")
    yield namespace, source, summary, fig, rows


def forget(namespace: str | None, confirmed: bool = False):
    """Delete this session's whole memory (messages, segments, trajectories, facts, clusters, logs)
    from the store, only with ``confirmed``; every view empties and the confirmation resets.
    Returns (summary, then one empty value per view, the confirmation box, the delete button)."""
    if not confirmed:
        return ("Nothing was deleted: tick the confirmation first.", *[gr.skip()] * len(_VIEWS_EMPTY),
                gr.skip(), gr.skip())
    if namespace:
        engine().delete_namespace(namespace)
    return ("This session's memory was deleted.", *_VIEWS_EMPTY, gr.Checkbox(value=False),
            gr.Button(interactive=False))


#: What every view shows after a delete: timeline, segments, source, chat, trace, trajectory graph,
#: swimlanes, picker, trajectory table, CoreFacts status, facts, fact sources, log, clusters plot,
#: clusters, cluster sources.
_VIEWS_EMPTY = (None, [], None, [], None, None, None, gr.Dropdown(choices=[], value=None), [],
                "CoreFacts are extracted after Structured Interaction Memory is built.", [], [], [], None, [], [])


# --------------------------------------------------------------------------- CoreFacts
@_guard
def build_facts(namespace: str | None, settings: dict | None, progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
    """CoreFact extraction and consolidation over every message no extraction has read yet (§3.3);
    minutes on the 135M model. Yields (status, fact rows, operation rows)."""
    eng = engine_for(settings)
    if not namespace or not eng.has_memory(namespace):
        yield "No memory yet: build it first.", [], []
        return

    def work(report):
        return eng.ingest([], namespace=namespace, core_facts=True, progress=report)

    def describe(state, seconds):
        if not state["total"]:
            return (f"Loading the model and reading the new messages for CoreFacts… {seconds:.0f} s"
                    f"{_model_share(namespace)}")
        left = (f" · about {seconds / state['done'] * (state['total'] - state['done']):.0f} s left at this pace"
                if state["done"] else "")
        return (f"Extracting CoreFacts: batch {state['done']} of {state['total']} (up to 12 messages each) · "
                f"{seconds:.0f} s{left}{_model_share(namespace)}. Facts appear below as each batch is written.")

    shown = -1
    for kind, value in _in_background(work, progress, describe):
        if kind == "status":
            written = eng.store.count("memsif_fact_ops", namespace)
            if written != shown:  # a batch was written: show its facts and operations now
                shown = written
                yield (value, *facts_view(namespace, None, None, settings))
            else:
                yield value, gr.skip(), gr.skip()
        else:
            report = value
    facts, ops = facts_view(namespace, None, None, settings)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(report.fact_ops.items())) or "no new operations"
    if report.fact_ops.get("REJECT"):
        counts += (" (REJECT: candidates the grounding gate turned away, as not said by the messages they cite; "
                   "filter the log by REJECT for the reasons)")
    yield (f"**{report.core_facts} current CoreFacts**; this pass: {counts}; {report.fact_llm_calls} LLM calls, "
           f"{report.fact_errors} errors (see the log)."), facts, ops


@_guard
def facts_view(namespace: str | None, op: str | None, subject: str | None, settings: dict | None = None):
    """CoreFacts by type and subject (with superseded history) and the operation log, filtered by
    operation and subject. Returns (fact rows, operation rows)."""
    eng = engine_for(settings)
    if not namespace or not eng.has_memory(namespace):
        return [], []
    facts = sorted(eng.facts(namespace, history=True), key=lambda f: (f.type, f.subject.lower(), int(f.id[1:])))
    if subject:
        facts = [f for f in facts if f.subject.lower() == subject.strip().lower()]
    return fact_rows(facts), op_rows(eng.fact_log(namespace, op=op or None, subject=subject or None))


def fact_sources(namespace: str | None, settings: dict | None, evt: gr.SelectData):
    """The source messages of the CoreFact in the selected row (provenance)."""
    eng = engine_for(settings)
    if not namespace or not eng.has_memory(namespace) or evt.index is None:
        return []
    row = evt.row_value if getattr(evt, "row_value", None) else None
    if not row:
        return []
    ids = [i.strip() for i in str(row[FACT_COLUMNS.index("sources")]).split(",") if i.strip()]
    return message_rows(ids, eng.messages(namespace))


# --------------------------------------------------------------------------- Chat
@_guard
def chat(question: str, history: list | None, write: bool, namespace: str | None, settings: dict | None):
    """Ask this session's memory. The answer comes with a collapsible trace (facts and evidence with
    source ids, sufficiency probability, traced back or not, tokens, seconds). With ``write`` the
    user's message is then written into memory as a new turn (CoreFacts follow in ``build_facts``);
    the model's answers are not, so a wrong answer never becomes memory. Returns (namespace, chat
    history, cleared question box, trace dict, cluster figure, cluster rows)."""
    if not question or not question.strip():
        gr.Warning("Type a question first.")
        return (gr.skip(),) * 6
    namespace = namespace or new_session()
    eng = engine_for(settings)
    history = [*(history or []), {"role": "user", "content": question}]
    trace: dict[str, Any] = {}
    if eng.has_memory(namespace):
        result = eng.ask(question, namespace=namespace)
        trace = result.to_dict()
        title, body = trace_markdown(trace)
        history += [{"role": "assistant", "content": answer_markdown(trace)},
                    {"role": "assistant", "content": body, "metadata": {"title": title, "status": "done"}}]
    else:
        history.append({"role": "assistant", "content": "No memory yet (or it is still being built): build it in "
                        "the Build tab, or tick “write my messages into memory” and tell me something."})
    if write:
        now = datetime.now().replace(microsecond=0)
        turn = uuid.uuid4().hex[:8]
        turns = [Message(id=f"chat:{turn}:q", namespace=namespace, speaker="user", text=question.strip(), time=now,
                         session_id=f"chat {now.date().isoformat()}")]
        eng.ingest(turns, namespace=namespace, core_facts=False)
    return (namespace, history, "", trace, *clusters_view(namespace, settings))


def facts_after_chat(write: bool, namespace: str | None, settings: dict | None,
                     progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
    """After a chat turn written into memory, read it for CoreFacts too."""
    if not write:
        yield gr.skip(), gr.skip(), gr.skip()
        return
    yield from build_facts(namespace, settings, progress)


# --------------------------------------------------------------------------- Trajectories, ActiveFacts
@_guard
def trajectories_view(namespace: str | None, settings: dict | None = None):
    """Trajectory graph, swimlanes and the trajectory ids of this session's memory."""
    eng = engine_for(settings)
    if not namespace or not eng.has_memory(namespace):
        return None, None, gr.Dropdown(choices=[], value=None)
    segments, trajectories = eng.segments(namespace), eng.trajectories(namespace)
    index = {m.id: m.index for m in eng.messages(namespace)}
    ids = [t.id for t in trajectories]
    return (trajectory_graph(segments, trajectories, index), trajectory_swimlanes(segments, trajectories, index),
            gr.Dropdown(choices=ids, value=None))


@_guard
def trajectory_detail(trajectory_id: str | None, namespace: str | None, settings: dict | None = None):
    """The segments and messages of one Event Trajectory, in time order."""
    eng = engine_for(settings)
    if not trajectory_id or not namespace or not eng.has_memory(namespace):
        return []
    return trajectory_detail_rows(trajectory_id, eng.segments(namespace), eng.trajectories(namespace),
                                  eng.messages(namespace))


@_guard
def clusters_view(namespace: str | None, settings: dict | None = None):
    """ActiveFact candidate clusters as points (Score_src, Score_qry) against θ_s / θ_q, and their table."""
    eng = engine_for(settings)
    clusters = eng.clusters(namespace) if namespace and eng.has_memory(namespace) else []
    rows = []
    for c in clusters:
        statement = c.get("statement") or c.get("central_statement") or ""
        rows.append([c["id"], c.get("label") or c["subject"], statement, round(c["score_src"], 3),
                     round(c["score_qry"], 3), len(c["sources"]), " | ".join(c["queries"]),
                     c.get("active_fact_id") or "not promoted", ", ".join(c["sources"])])
    return cluster_scatter(clusters, eng.config.theta_src, eng.config.theta_qry), rows


def cluster_sources(namespace: str | None, settings: dict | None, evt: gr.SelectData):
    """The source messages R_k of the selected candidate cluster."""
    eng = engine_for(settings)
    row = evt.row_value if getattr(evt, "row_value", None) else None
    if not namespace or not eng.has_memory(namespace) or not row:
        return []
    ids = [i.strip() for i in str(row[CLUSTER_COLUMNS.index("sources")]).split(",") if i.strip()]
    return message_rows(ids, eng.messages(namespace))


# --------------------------------------------------------------------------- Settings
def apply_settings(alpha: float, tau_split: float, tau_merge: float, top_k: float, theta_src: float,
                   theta_qry: float, model: str):
    """Validate and keep this session's method settings. Returns (settings, status)."""
    settings = {"alpha": float(alpha), "tau_split": float(tau_split), "tau_merge": float(tau_merge),
                "top_k": int(top_k), "theta_src": float(theta_src), "theta_qry": float(theta_qry),
                "model": model}
    try:
        _settings_config(MemSIFConfig.from_env(), settings)
    except MemSIFError as exc:
        raise gr.Error(str(exc)) from exc
    return settings, (f"Settings applied: α={alpha}, τ_split={tau_split}, τ_merge={tau_merge}, Top-K={int(top_k)}, "
                      f"θ_s={theta_src}, θ_q={theta_qry}, model `{model}`. Rebuilding…")


@_guard
def rebuild(namespace: str | None, source: dict | None, settings: dict | None,
            progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
    """Delete this session's memory and build it again from the last transcript with the new settings."""
    if not source:
        yield namespace, source, "Nothing to rebuild yet: build memory in the Build tab.", gr.skip(), gr.skip()
        return
    if namespace:
        engine().delete_namespace(namespace)
    yield from build(source["path"], source["sample"], namespace, settings, None, progress)


# --------------------------------------------------------------------------- layout
def _preload() -> None:
    """Load the models while the page is already usable (first build or question does not wait)."""
    try:
        engine()
    except MemSIFError as exc:  # shown again, as a gr.Error, on first use
        print(f"MemSIF: could not load the models: {exc}")


CFG = MemSIFConfig.from_env()

with gr.Blocks(title="MemSIF inspector") as demo:
    namespace = gr.State(delete_callback=_forget if FORGET_SESSIONS else None)
    settings = gr.State()
    source = gr.State()
    gr.Markdown("# MemSIF inspector\nLong-term memory for LLM agents, built in the open: Topical Segments and "
                "Event Trajectories (Structured Interaction Memory), CoreFacts and ActiveFacts (Dual-Track Fact "
                "Memory). Build from a transcript, then chat with it and see why each answer came out.")
    with gr.Tab("Build") as build_tab:
        with gr.Row():
            upload = gr.File(label="Transcript (LoCoMo, LongMemEval, a ChatGPT or Claude export's conversations.json, "
                             "OpenAI messages, JSONL or text; ≤ 20 MB)",
                             file_types=[".json", ".jsonl", ".txt", ".md", ".log", ".text"])
            sample = gr.Dropdown(label="Sample (files with several conversations)", choices=[],
                                 allow_custom_value=True)
        gr.Markdown("Without a file, **Build memory** uses the bundled LoCoMo conversation conv-26 (419 messages, "
                    "about two minutes on 2 CPU cores). Building another transcript replaces this session's memory.")
        build_btn = gr.Button("Build memory", variant="primary", elem_id="build-btn")
        summary = gr.Markdown(elem_id="build-summary")
        timeline = gr.Plot(label="φ(u_t, S_i) per message against τ_split and τ_merge", elem_id="timeline")
        with gr.Accordion("What the timeline shows", open=False):
            gr.Markdown(NOTATION_TIMELINE)
        table = gr.Dataframe(headers=SEGMENT_COLUMNS, label="Topical Segments", wrap=True, max_height=400)
        with gr.Accordion("Delete this session's memory", open=False):
            gr.Markdown("Deletes every message, segment, trajectory, fact, cluster and log of this session. "
                        "It cannot be undone.")
            with gr.Row():
                forget_confirm = gr.Checkbox(label="Yes, delete all of this session's memory", value=False)
                forget_btn = gr.Button("Delete", size="sm", variant="stop", interactive=False, elem_id="forget-btn")
    with gr.Tab("Chat"):
        chatbot = gr.Chatbot(label="Chat with this memory (each answer comes with its best supporting messages; its "
                                   "trace folds open below it)", height=480)
        with gr.Row():
            question = gr.Textbox(label="Question", placeholder="What did Caroline research?", scale=4,
                                  elem_id="question")
            send_btn = gr.Button("Send", variant="primary", scale=1, elem_id="send-btn")
            write = gr.Checkbox(label="write my messages into memory", value=False)
        with gr.Accordion("Trace of the last answer (raw JSON)", open=False):
            trace = gr.JSON(label="Trace of the last answer (raw)", open=False)
    with gr.Tab("Trajectories") as traj_tab:
        traj_btn = gr.Button("Refresh")
        traj_graph = gr.Plot(label="Topical Segments linked into Event Trajectories", elem_id="traj-graph")
        traj_lanes = gr.Plot(label="Event Trajectories over time", elem_id="traj-lanes")
        traj_pick = gr.Dropdown(label="Trajectory", choices=[], allow_custom_value=True)
        traj_table = gr.Dataframe(headers=TRAJECTORY_DETAIL_COLUMNS, label="Its segments and messages", wrap=True,
                                  max_height=400)
    with gr.Tab("CoreFacts"):
        facts_status = gr.Markdown("CoreFacts are extracted after Structured Interaction Memory is built.")
        with gr.Row():
            facts_btn = gr.Button("Extract CoreFacts now")
            refresh_facts = gr.Button("Refresh")
            op_filter = gr.Dropdown(["", "ADD", "UPDATE", "MERGE", "SUPERSEDE", "REJECT", "NOOP"], label="Operation")
            subject_filter = gr.Textbox(label="Subject")
        facts_table = gr.Dataframe(headers=FACT_COLUMNS, label="CoreFacts by type and subject (select one for its "
                                   "sources)", wrap=True, max_height=400,
                                   column_widths=["7%", "10%", "14%", "41%", "11%", "9%", "8%"])
        fact_messages = gr.Dataframe(headers=MESSAGE_COLUMNS, label="Source messages of the selected fact", wrap=True)
        ops_table = gr.Dataframe(headers=OP_COLUMNS, label="Operation log (append-only)", wrap=True, max_height=400,
                                 column_widths=["4%", "8%", "27%", "7%", "42%", "12%"])
    with gr.Tab("ActiveFacts") as active_tab:
        clusters_btn = gr.Button("Refresh")
        clusters_plot = gr.Plot(label="Candidate clusters: Score_src vs Score_qry (Eq. 4)", elem_id="clusters")
        clusters_table = gr.Dataframe(headers=CLUSTER_COLUMNS, label="Candidate clusters C_k (select one for its "
                                      "source messages R_k)", wrap=True, elem_id="clusters-table",
                                      column_widths=["6%", "12%", "25%", "7%", "7%", "4%", "22%", "8%", "9%"])
        cluster_messages = gr.Dataframe(headers=MESSAGE_COLUMNS, label="Source messages R_k of the selected cluster",
                                        wrap=True)
        with gr.Accordion("What the scores mean", open=False):
            gr.Markdown(NOTATION_ACTIVE)
    with gr.Tab("Settings"):
        gr.Markdown("Method settings for this session (defaults: the paper's Table 13). Applying them rebuilds "
                    "this session's memory from the last transcript.")
        with gr.Row():
            alpha = gr.Slider(0, 1, value=CFG.alpha_segment, step=0.05, label="α (semantic weight in φ, Eq. 1)")
            tau_split = gr.Slider(0, 1, value=CFG.tau_split, step=0.005, label="τ_split")
            tau_merge = gr.Slider(0, 1, value=CFG.tau_merge, step=0.005, label="τ_merge")
            top_k = gr.Slider(1, 10, value=CFG.top_k, step=1, label="Top-K trajectories")
        with gr.Row():
            theta_src = gr.Slider(0, 1, value=CFG.theta_src, step=0.05, label="θ_s")
            theta_qry = gr.Slider(0, 1, value=CFG.theta_qry, step=0.05, label="θ_q")
            model = gr.Dropdown(model_choices(), value=model_choices()[0], label="LLM (backend:model)")
        apply_btn = gr.Button("Apply and rebuild", variant="primary")
        settings_status = gr.Markdown()

    demo.load(new_session, outputs=namespace, api_name=False).then(_preload, api_name=False)
    forget_confirm.change(lambda ok: gr.Button(interactive=bool(ok)), inputs=forget_confirm, outputs=forget_btn,
                          api_name=False)
    forget_btn.click(forget, inputs=[namespace, forget_confirm],
                     outputs=[summary, timeline, table, source, chatbot, trace, traj_graph, traj_lanes, traj_pick,
                              traj_table, facts_status, facts_table, fact_messages, ops_table, clusters_plot,
                              clusters_table, cluster_messages, forget_confirm, forget_btn], api_name="forget")
    upload.change(list_samples, inputs=upload, outputs=[sample, summary], api_name="samples")
    built = build_btn.click(build, inputs=[upload, sample, namespace, settings, source],
                            outputs=[namespace, source, summary, timeline, table], api_name="build",
                            show_progress_on=summary)
    built.success(trajectories_view, inputs=[namespace, settings], outputs=[traj_graph, traj_lanes, traj_pick],
                  api_name=False)
    built.success(lambda src: gr.Textbox(placeholder=(src or {}).get("hint") or "Ask this memory a question"),
                  inputs=source, outputs=question, api_name=False)
    built.success(build_facts, inputs=[namespace, settings], outputs=[facts_status, facts_table, ops_table], show_progress_on=facts_status,
                  api_name=False)
    asked = gr.on([question.submit, send_btn.click], chat, inputs=[question, chatbot, write, namespace, settings],
                  outputs=[namespace, chatbot, question, trace, clusters_plot, clusters_table], api_name="ask")
    asked.success(facts_after_chat, inputs=[write, namespace, settings],
                  outputs=[facts_status, facts_table, ops_table], show_progress_on=facts_status, api_name=False)
    traj_btn.click(trajectories_view, inputs=[namespace, settings], outputs=[traj_graph, traj_lanes, traj_pick],
                   api_name="trajectories")
    traj_pick.change(trajectory_detail, inputs=[traj_pick, namespace, settings], outputs=traj_table,
                     api_name="trajectory")
    facts_btn.click(build_facts, inputs=[namespace, settings], outputs=[facts_status, facts_table, ops_table], show_progress_on=facts_status,
                    api_name="build_facts")
    refresh_facts.click(facts_view, inputs=[namespace, op_filter, subject_filter, settings],
                        outputs=[facts_table, ops_table], api_name="facts")
    for trigger in (op_filter.change, subject_filter.submit):
        trigger(facts_view, inputs=[namespace, op_filter, subject_filter, settings], outputs=[facts_table, ops_table],
                api_name=False)
    facts_table.select(fact_sources, inputs=[namespace, settings], outputs=fact_messages, api_name=False)
    clusters_table.select(cluster_sources, inputs=[namespace, settings], outputs=cluster_messages, api_name=False)
    clusters_btn.click(clusters_view, inputs=[namespace, settings], outputs=[clusters_plot, clusters_table],
                       api_name="clusters")
    # plotly sizes a figure drawn in a hidden tab at half width: draw again when the tab is shown
    traj_tab.select(trajectories_view, inputs=[namespace, settings], outputs=[traj_graph, traj_lanes, traj_pick],
                    api_name=False)
    active_tab.select(clusters_view, inputs=[namespace, settings], outputs=[clusters_plot, clusters_table],
                      api_name=False)
    build_tab.select(timeline_view, inputs=[namespace, settings], outputs=[timeline, table], api_name=False)
    timeline_btn = gr.Button(visible=False)
    timeline_btn.click(timeline_view, inputs=[namespace, settings], outputs=[timeline, table], api_name="timeline")
    applied = apply_btn.click(apply_settings, inputs=[alpha, tau_split, tau_merge, top_k, theta_src, theta_qry, model],
                              outputs=[settings, settings_status], api_name="settings")
    rebuilt = applied.success(rebuild, inputs=[namespace, source, settings],
                              outputs=[namespace, source, summary, timeline, table], api_name="rebuild",
                              show_progress_on=summary)
    rebuilt.success(trajectories_view, inputs=[namespace, settings], outputs=[traj_graph, traj_lanes, traj_pick],
                    api_name=False)
    rebuilt.success(lambda: "Rebuilt with these settings (messages written from Chat are not part of the "
                    "transcript and were not rebuilt).", outputs=settings_status, api_name=False)
    rebuilt.success(build_facts, inputs=[namespace, settings], outputs=[facts_status, facts_table, ops_table], show_progress_on=facts_status,
                    api_name=False)


if __name__ == "__main__":
    demo.queue(default_concurrency_limit=4).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), show_error=True,
        max_file_size=MAX_UPLOAD_BYTES)
