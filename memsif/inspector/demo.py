"""The inspector's page: one tab per module of this package, and the events that cross tabs (a
build refreshes the trajectories, starts CoreFact extraction and sets the chat's example question; a
delete empties every view)."""

from __future__ import annotations

import time

import gradio as gr

from memsif.config import MemSIFConfig
from memsif.errors import MemSIFError
from memsif.inspector import activefacts, build, chat, corefacts, evaluate, settings, tools, trajectories
from memsif.inspector.common import engine, forget_session, models_loaded, new_session


def _preload():
    """Load the models while the page is already usable, saying so in the Build tab's models line the
    first time after a start (a click meanwhile shows the same state in the build summary,
    ``common.loading_engine``). Yields the models line."""
    if models_loaded():
        yield gr.skip()
        return
    start = time.perf_counter()
    yield ("⏳ Loading the models (first visit after the server started: about 15 s on 2 CPU cores); "
           "**Build memory** can be pressed now and goes on as soon as they are ready.")
    try:
        engine()
        build.example_memory()  # read once now: the first "Build memory" only imports it
    except MemSIFError as exc:  # shown again, as a gr.Error, on first use
        print(f"MemSIF: could not load the models: {exc}")
        yield f"⚠️ The models could not be loaded: {exc}"
        return
    yield (f"✅ Models loaded in {time.perf_counter() - start:.0f} s. **Build memory** without a file shows the "
           "bundled example at once.")


#: The MCP type of the page's own endpoints (Gradio lists a function with a ``_mcp_type`` other than
#: "tool", "resource" or "prompt" in the API docs but not as an MCP tool).
PAGE_ENDPOINT = "page"

#: The page's own CSS (``launch(css=PAGE_CSS)``; Gradio 6 takes it there). Table headers wrap between
#: words only: Gradio's wrapping tables break any word that does not fit its column ("segme nt").
PAGE_CSS = """
table thead th, table thead th * { word-break: normal !important; overflow-wrap: normal !important;
                                   hyphens: none !important; }
table thead th { min-width: max-content; }
"""


def build_demo(config: MemSIFConfig | None = None, forget_sessions: bool = False, mcp: bool = False) -> gr.Blocks:
    """The inspector as a ``gr.Blocks``: every view is a named API endpoint, and the agent tools of
    ``memsif.inspector.tools`` (``/memory_ingest``, ``/memory_ask``, ``/memory_facts``) sit beside
    them. ``config`` sets the Settings tab's starting values; ``forget_sessions`` deletes a session's
    memory when its browser tab closes (public Spaces); with ``mcp`` (launch with ``mcp_server=True``)
    the page's per-session endpoints stay callable and documented (``view_api``) but are left out of
    MCP's tool list, so an agent sees only the tools that take a namespace."""
    cfg = config or MemSIFConfig.from_env()
    with gr.Blocks(title="MemSIF inspector") as demo:
        namespace = gr.State(delete_callback=forget_session if forget_sessions else None)
        session_settings = gr.State()
        source = gr.State()
        gr.Markdown("# MemSIF inspector\nLong-term memory for LLM agents, built in the open: Topical Segments and "
                    "Event Trajectories (Structured Interaction Memory), CoreFacts and ActiveFacts (Dual-Track Fact "
                    "Memory). Build from a transcript, then chat with it and see why each answer came out.")
        with gr.Tab("Build") as build_tab:
            b = build.layout()
        with gr.Tab("Chat"):
            c = chat.layout()
        with gr.Tab("Trajectories") as traj_tab:
            t = trajectories.layout()
        with gr.Tab("CoreFacts"):
            f = corefacts.layout()
        with gr.Tab("ActiveFacts") as active_tab:
            a = activefacts.layout()
        with gr.Tab("Evaluate"):
            e = evaluate.layout()
        with gr.Tab("Settings"):
            s = settings.layout(cfg)

        per_session = [namespace, session_settings]
        traj_views = [t.graph, t.lanes, t.pick]
        fact_views = [f.status, f.facts, f.ops]
        demo.load(new_session, outputs=namespace, api_name=False).then(
            _preload, outputs=b.models, api_name=False, show_progress="hidden")

        # Build
        b.forget_confirm.change(lambda ok: gr.Button(interactive=bool(ok)), inputs=b.forget_confirm,
                                outputs=b.forget_btn, api_name=False)
        b.forget_btn.click(build.forget, inputs=[namespace, b.forget_confirm],
                           outputs=[b.summary, b.timeline, b.table, source, c.chatbot, c.trace, c.pick, c.context,
                                    c.context_plot, *traj_views, t.table, *fact_views[:2], f.sources, f.ops, a.plot,
                                    a.table, a.sources, e.summary, e.plot, e.table, e.rows, b.forget_confirm,
                                    b.forget_btn], api_name="forget")
        b.upload.change(build.list_samples, inputs=b.upload, outputs=[b.sample, b.summary], api_name="samples")
        built = b.build_btn.click(build.build, inputs=[b.upload, b.sample, namespace, session_settings, source, b.live],
                                  outputs=[namespace, source, b.summary, b.timeline, b.table], api_name="build",
                                  show_progress_on=b.summary)
        built.success(trajectories.trajectories_view, inputs=per_session, outputs=traj_views, api_name=False)
        built.then(build.chat_after_build, inputs=source, outputs=[c.chatbot, c.trace, c.pick, c.context,
                                                                   c.context_plot], api_name=False)
        built.success(lambda src: gr.Textbox(placeholder=(src or {}).get("hint") or "Ask this memory a question"),
                      inputs=source, outputs=c.question, api_name=False)
        built.success(corefacts.facts_after_build, inputs=[source, *per_session], outputs=fact_views,
                      show_progress_on=f.status, api_name=False)
        build_tab.select(build.timeline_view, inputs=[*per_session, source], outputs=[b.timeline, b.table],
                         api_name=False)
        timeline_btn = gr.Button(visible=False)
        timeline_btn.click(build.timeline_view, inputs=[*per_session, source], outputs=[b.timeline, b.table],
                           api_name="timeline")

        # Chat
        asked = gr.on([c.question.submit, c.send_btn.click], chat.chat,
                      inputs=[c.question, c.chatbot, c.write, *per_session],
                      outputs=[namespace, c.chatbot, c.question, c.trace, a.plot, a.table, c.pick], api_name="ask")
        asked.success(chat.facts_after_chat, inputs=[c.write, *per_session], outputs=fact_views,
                      show_progress_on=f.status, api_name=False)
        c.pick.change(chat.message_context, inputs=[c.pick, *per_session], outputs=[c.context, c.context_plot],
                      api_name="message")

        # Trajectories (plotly sizes a figure drawn in a hidden tab at half width: draw again when shown)
        t.refresh_btn.click(trajectories.trajectories_view, inputs=per_session, outputs=traj_views,
                            api_name="trajectories")
        traj_tab.select(trajectories.trajectories_view, inputs=per_session, outputs=traj_views, api_name=False)
        t.pick.change(trajectories.trajectory_detail, inputs=[t.pick, *per_session], outputs=t.table,
                      api_name="trajectory")

        # CoreFacts
        f.extract_btn.click(corefacts.build_facts, inputs=per_session, outputs=fact_views, show_progress_on=f.status,
                            api_name="build_facts")
        f.refresh_btn.click(corefacts.facts_view, inputs=[namespace, f.op_filter, f.subject_filter, session_settings],
                            outputs=[f.facts, f.ops], api_name="facts")
        for trigger in (f.op_filter.change, f.subject_filter.submit):
            trigger(corefacts.facts_view, inputs=[namespace, f.op_filter, f.subject_filter, session_settings],
                    outputs=[f.facts, f.ops], api_name=False)
        f.facts.select(corefacts.fact_sources, inputs=per_session, outputs=f.sources, api_name=False)

        # ActiveFacts
        a.refresh_btn.click(activefacts.clusters_view, inputs=per_session, outputs=[a.plot, a.table],
                            api_name="clusters")
        active_tab.select(activefacts.clusters_view, inputs=per_session, outputs=[a.plot, a.table], api_name=False)
        a.table.select(activefacts.cluster_sources, inputs=per_session, outputs=a.sources, api_name=False)

        # Evaluate
        e.run_btn.click(evaluate.evaluate, inputs=[namespace, source, session_settings],
                        outputs=[e.summary, e.plot, e.table, e.rows], show_progress_on=e.summary, api_name="evaluate")
        e.which.change(evaluate.redraw, inputs=[e.rows, e.which], outputs=e.plot, api_name=False)

        # Settings
        applied = s.apply_btn.click(settings.apply_settings,
                                    inputs=[s.alpha, s.tau_split, s.tau_merge, s.top_k, s.theta_src, s.theta_qry,
                                            s.model],
                                    outputs=[session_settings, s.status], api_name="settings")
        s.reset_btn.click(settings.reset_settings,
                          outputs=[s.alpha, s.tau_split, s.tau_merge, s.top_k, s.theta_src, s.theta_qry, s.model,
                                   s.status], api_name=False)
        rebuilt = applied.success(settings.rebuild, inputs=[namespace, source, session_settings],
                                  outputs=[namespace, source, b.summary, b.timeline, b.table], api_name="rebuild",
                                  show_progress_on=b.summary)
        rebuilt.success(trajectories.trajectories_view, inputs=per_session, outputs=traj_views, api_name=False)
        rebuilt.success(lambda: "Rebuilt with these settings (messages written from Chat are not part of the "
                        "transcript and were not rebuilt).", outputs=s.status, api_name=False)
        rebuilt.success(corefacts.build_facts, inputs=per_session, outputs=fact_views, show_progress_on=f.status,
                        api_name=False)

        if mcp:  # per-session page endpoints mean nothing to an agent: out of MCP's tool list, still in the API docs
            for fn in demo.fns.values():
                if fn.api_visibility == "public" and fn.fn is not None:
                    fn.fn._mcp_type = PAGE_ENDPOINT  # Gradio's MCP server lists only fns without a type, or "tool"
        tools.register()
    return demo
