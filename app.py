"""MemSIF inspector (Gradio). Build Structured Interaction Memory from a transcript and see where
Topical Segment boundaries fall and why (φ against τ_split/τ_merge).

Run: ``python app.py`` (offline, packaged default models). Each browser session gets its own
memory namespace, derived on the server.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import gradio as gr

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.errors import MemSIFError
from memsif.io import load_transcripts
from memsif.viz import (
    FACT_COLUMNS,
    OP_COLUMNS,
    SEGMENT_COLUMNS,
    cluster_scatter,
    fact_rows,
    op_rows,
    phi_timeline,
    segment_rows,
    trajectory_graph,
    trajectory_swimlanes,
)

EXAMPLE = Path(__file__).resolve().parent / "assets" / "locomo-conv-26.json"
MAX_UPLOAD_BYTES = 20 * 1024 * 1024

_engine: MemSIF | None = None
_engine_lock = threading.Lock()


def engine() -> MemSIF:
    """The process's one engine (embedded Qdrant locks its folder), created on first use."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = MemSIF(MemSIFConfig.from_env())
            _engine.load_models()
        return _engine


def new_session() -> str:
    """A namespace for this browser session, made on the server (never taken from the client)."""
    return "ui-" + uuid.uuid4().hex[:12]


def _views(namespace: str):
    eng = engine()
    decisions = eng.decisions(namespace, "segment")
    messages = eng.messages(namespace)
    cfg = eng.config
    fig = phi_timeline(decisions, messages, cfg.tau_split, cfg.tau_merge)
    rows = segment_rows(eng.segments(namespace), decisions)
    return fig, rows


def list_samples(file) -> gr.Dropdown:
    if file is None:
        return gr.Dropdown(choices=[], value=None)
    try:
        samples = [t.sample_id for t in load_transcripts(_checked_path(file))]
    except MemSIFError as exc:
        raise gr.Error(str(exc)) from exc
    return gr.Dropdown(choices=samples, value=samples[0] if samples else None)


def _checked_path(file) -> str:
    path = file if isinstance(file, str) else file.name
    if os.path.getsize(path) > MAX_UPLOAD_BYTES:
        raise gr.Error(f"The file is larger than {MAX_UPLOAD_BYTES // 2**20} MB; split it and upload the parts.")
    return path


def build(file, sample: str | None, namespace: str | None, progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
    """Ingest the uploaded transcript (or the bundled example when none is given) into this session's
    namespace; API clients without a browser session get a fresh namespace, returned first."""
    namespace = namespace or new_session()
    path = _checked_path(file) if file is not None else str(EXAMPLE)
    try:
        transcripts = load_transcripts(path, sample=sample or None)
        progress(0, desc="loading models")
        eng = engine()
        report = None
        for tr in transcripts:
            # Structured Interaction Memory only here: CoreFacts take minutes on the 135M model and
            # belong to the full inspector (facts view), which fills them in after the timeline.
            report = eng.ingest(tr.messages, namespace=namespace, core_facts=False,
                                progress=lambda done, total, stage: progress(done / total, desc=stage))
        fig, rows = _views(namespace)
    except MemSIFError as exc:
        raise gr.Error(str(exc)) from exc
    summary = (f"**{report.total_messages} messages** → **{report.segments} Topical Segments**, "
               f"**{report.trajectories} Event Trajectories**. Segment judge on "
               f"{report.judge_calls_segment} of {report.messages} new messages; trajectory judge "
               f"{report.judge_calls_trajectory} calls; {report.seconds:.1f} s. Namespace `{namespace}`.")
    return namespace, summary, fig, rows


def _guard(fn):
    """Engine errors become a visible Gradio error that says what to do."""
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemSIFError as exc:
            raise gr.Error(str(exc)) from exc
    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


@_guard
def chat(question: str, history: list | None, namespace: str | None):
    """Ask this session's memory; returns the chat history, the answer's trace and the cluster plot."""
    if not namespace:
        raise gr.Error("Build memory first (Build tab).")
    eng = engine()
    result = eng.ask(question, namespace=namespace)
    history = [*(history or []), {"role": "user", "content": question},
               {"role": "assistant", "content": result.answer or "(empty answer)"}]
    return history, result.to_dict(), *clusters_view(namespace)


@_guard
def trajectories_view(namespace: str | None):
    """Trajectory graph and swimlanes for this session's memory."""
    eng = engine()
    segments, trajectories = eng.segments(namespace), eng.trajectories(namespace)
    index = {m.id: m.index for m in eng.messages(namespace)}
    return trajectory_graph(segments, trajectories), trajectory_swimlanes(segments, trajectories, index)


@_guard
def facts_view(namespace: str | None, op: str | None, subject: str | None):
    """CoreFacts (with history) and the operation log, filtered by operation and subject."""
    eng = engine()
    return (fact_rows(eng.facts(namespace, history=True)),
            op_rows(eng.fact_log(namespace, op=op or None, subject=subject or None)))


@_guard
def build_facts(namespace: str | None, progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
    """CoreFact extraction and consolidation over everything not read yet (slow on the 135M model)."""
    eng = engine()
    eng.ingest([], namespace=namespace, core_facts=True,
               progress=lambda done, total, stage: progress(done / total, desc=stage))
    return facts_view(namespace, None, None)


@_guard
def clusters_view(namespace: str | None):
    """ActiveFact candidate clusters against θ_s / θ_q, and their table."""
    eng = engine()
    clusters = eng.clusters(namespace)
    rows = [[c["id"], c["subject"], round(c["score_src"], 3), round(c["score_qry"], 3), len(c["sources"]),
             " | ".join(c["queries"]), c.get("active_fact_id") or ""] for c in clusters]
    return cluster_scatter(clusters, eng.config.theta_src, eng.config.theta_qry), rows


with gr.Blocks(title="MemSIF inspector") as demo:
    namespace = gr.State()
    gr.Markdown("# MemSIF inspector\nBuild Structured Interaction Memory from a chat transcript and see "
                "where Topical Segment boundaries fall: φ(u_t, S_i) against τ_split and τ_merge, and which "
                "decisions the LLM judge made.")
    with gr.Tab("Build"):
        with gr.Row():
            upload = gr.File(label="Transcript (LoCoMo / LongMemEval JSON, JSONL, text)",
                             file_types=[".json", ".jsonl", ".txt"])
            sample = gr.Dropdown(label="Sample", choices=[], allow_custom_value=False)
        with gr.Row():
            build_btn = gr.Button("Build memory (bundled example LoCoMo conv-26 when no file)", variant="primary")
        summary = gr.Markdown()
        timeline = gr.Plot(label="φ timeline")
        table = gr.Dataframe(headers=SEGMENT_COLUMNS, label="Topical Segments", wrap=True)
    with gr.Tab("Chat"):
        chatbot = gr.Chatbot(label="Ask this memory")
        question = gr.Textbox(label="Question", placeholder="What did Caroline research?")
        trace = gr.JSON(label="Trace of the last answer")
    with gr.Tab("Trajectories"):
        traj_btn = gr.Button("Show Event Trajectories")
        traj_graph = gr.Plot(label="Trajectory graph")
        traj_lanes = gr.Plot(label="Trajectories over time")
    with gr.Tab("CoreFacts"):
        with gr.Row():
            facts_btn = gr.Button("Build CoreFacts (minutes on the 135M model)")
            refresh_facts = gr.Button("Refresh")
            op_filter = gr.Dropdown(["", "ADD", "UPDATE", "MERGE", "SUPERSEDE", "NOOP"], label="Operation")
            subject_filter = gr.Textbox(label="Subject")
        facts_table = gr.Dataframe(headers=FACT_COLUMNS, label="CoreFacts (with history)", wrap=True)
        ops_table = gr.Dataframe(headers=OP_COLUMNS, label="Operation log", wrap=True)
    with gr.Tab("ActiveFacts"):
        clusters_btn = gr.Button("Refresh")
        clusters_plot = gr.Plot(label="Candidate clusters: Score_src vs Score_qry")
        clusters_table = gr.Dataframe(headers=["cluster", "subject", "Score_src", "Score_qry", "|R|", "queries",
                                               "ActiveFact"], wrap=True)

    demo.load(new_session, outputs=namespace, api_name=False)
    upload.change(list_samples, inputs=upload, outputs=sample, api_name="samples")
    build_btn.click(build, inputs=[upload, sample, namespace], outputs=[namespace, summary, timeline, table],
                    api_name="build")
    question.submit(chat, inputs=[question, chatbot, namespace],
                    outputs=[chatbot, trace, clusters_plot, clusters_table], api_name="ask")
    traj_btn.click(trajectories_view, inputs=namespace, outputs=[traj_graph, traj_lanes], api_name="trajectories")
    facts_btn.click(build_facts, inputs=namespace, outputs=[facts_table, ops_table], api_name="build_facts")
    refresh_facts.click(facts_view, inputs=[namespace, op_filter, subject_filter], outputs=[facts_table, ops_table],
                        api_name="facts")
    clusters_btn.click(clusters_view, inputs=namespace, outputs=[clusters_plot, clusters_table], api_name="clusters")


if __name__ == "__main__":
    demo.queue(default_concurrency_limit=4).launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                                                       show_error=True)
