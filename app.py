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
from memsif.viz import SEGMENT_COLUMNS, phi_timeline, segment_rows

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


with gr.Blocks(title="MemSIF inspector") as demo:
    namespace = gr.State()
    gr.Markdown("# MemSIF inspector\nBuild Structured Interaction Memory from a chat transcript and see "
                "where Topical Segment boundaries fall: φ(u_t, S_i) against τ_split and τ_merge, and which "
                "decisions the LLM judge made.")
    with gr.Row():
        upload = gr.File(label="Transcript (LoCoMo / LongMemEval JSON, JSONL, text)",
                         file_types=[".json", ".jsonl", ".txt"])
        sample = gr.Dropdown(label="Sample", choices=[], allow_custom_value=False)
    with gr.Row():
        build_btn = gr.Button("Build memory (bundled example LoCoMo conv-26 when no file)", variant="primary")
    summary = gr.Markdown()
    timeline = gr.Plot(label="φ timeline")
    table = gr.Dataframe(headers=SEGMENT_COLUMNS, label="Topical Segments", wrap=True)

    demo.load(new_session, outputs=namespace, api_name=False)
    upload.change(list_samples, inputs=upload, outputs=sample, api_name="samples")
    build_btn.click(build, inputs=[upload, sample, namespace], outputs=[namespace, summary, timeline, table],
                    api_name="build")


if __name__ == "__main__":
    demo.queue(default_concurrency_limit=4).launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                                                       show_error=True)
