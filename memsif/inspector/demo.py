"""The inspector's page: one tab per module of this package, and the events that cross tabs (a
build refreshes the trajectories, starts CoreFact extraction and sets the chat's example question; a
delete empties every view)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import gradio as gr

from memsif.api import MemSIF, MemSIFError
from memsif.inspector import activefacts, build, chat, corefacts, evaluate, search, trajectories
from memsif.inspector.activefacts import ActiveFactsTab
from memsif.inspector.build import BuildTab
from memsif.inspector.chat import ChatTab
from memsif.inspector.common import BuiltSource, Inspector, Page, model_in_use, new_session
from memsif.inspector.corefacts import CoreFactsTab
from memsif.inspector.evaluate import EvaluateTab
from memsif.inspector.search import SearchTab
from memsif.inspector.settings import SettingsTab
from memsif.inspector.tools import AgentTools
from memsif.inspector.trajectories import TrajectoriesTab
from memsif.markdown import code_span


def _preloader(app: Inspector):
    """The page's first event: load the models while the page is already usable, saying so in the Build
    tab's models line the first time after a start (a click meanwhile shows the same state in the build
    summary, ``Inspector.loading_engine``). Yields the models line and the Settings tab's model line,
    which name the model, what runs it and, on a fallback, why and the fix (``common.model_in_use``)."""
    def preload():
        if app.models_loaded():
            yield gr.skip(), model_in_use(app.engine())
            return
        start = time.perf_counter()
        loading = f"⏳ Loading the models (the first visit after the server started{app.load_pace()})"
        yield f"{loading}; **Build memory** can be pressed now and goes on as soon as they are ready.", f"{loading}."
        try:
            eng = app.engine()
            app.example()  # read once now: the first "Build memory" only imports it
        except MemSIFError as exc:  # shown again, as a gr.Error, on first use
            print(f"MemSIF: could not load the models: {exc}")
            yield f"⚠️ The models could not be loaded: {exc}", f"⚠️ The models could not be loaded: {exc}"
            return
        yield (f"✅ Models loaded in {time.perf_counter() - start:.0f} s. **Build memory** without a file shows the "
               f"bundled example at once. {model_in_use(eng)}", model_in_use(eng))
    return preload


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

#: Words Gradio's screen-reader status line reads out that its English locale lacks (it would read the raw
#: key, "common.complete", when an event ends); ``launch(i18n=PAGE_I18N)``.
PAGE_I18N = gr.I18n(en={"common.complete": "Done", "common.error": "Error"})


def build_demo(engine: MemSIF, *, forget_sessions: bool = False, mcp: bool = False,
               extra_models: Sequence[str] = ()) -> gr.Blocks:
    """The inspector over ``engine`` (made once by the caller: ``app.main`` from the environment,
    tests with fakes; its models load on the first visit) as a ``gr.Blocks``: every view is a named
    API endpoint, and the agent tools of ``memsif.inspector.tools`` (``/memory_ingest``,
    ``/memory_ask``, ``/memory_facts``) sit beside them. One ``Inspector`` holds the engine and what
    the page derives from it (``demo.inspector``); every tab's handlers are bound to it. The Settings
    tab starts from ``engine``'s configuration and also offers ``extra_models`` ("backend:model").
    ``forget_sessions`` deletes a session's memory when its browser tab closes (public Spaces); with
    ``mcp`` (launch with ``mcp_server=True``) the page's per-session endpoints stay callable and
    documented (``view_api``) but are left out of MCP's tool list, so an agent sees only the tools
    that take a namespace."""
    app = Inspector(engine, extra_models)
    tabs = _tabs(app)
    with gr.Blocks(title="MemSIF inspector") as demo:
        page = _layout(tabs, app, forget_sessions)
        demo.load(new_session, outputs=page.namespace, api_name=False).then(
            _preloader(app), outputs=[page.build.models, page.settings_tab.running], api_name=False,
            show_progress="hidden")
        for tab in (tabs.build, tabs.trajectories, tabs.corefacts, tabs.activefacts, tabs.search, tabs.evaluate):
            tab.wire(page)
        asked = tabs.chat.wire(page)
        asked.success(tabs.chat.facts_after_chat, inputs=[page.chat.write, page.namespace, page.settings],
                      outputs=corefacts.progress_views(page.corefacts), show_progress_on=page.corefacts.status,
                      api_name=False)
        _wire_across_tabs(page, tabs)
        if mcp:  # per-session page endpoints mean nothing to an agent: out of MCP's tool list, still in the API docs
            for fn in demo.fns.values():
                if fn.api_visibility == "public" and fn.fn is not None:
                    # Gradio's MCP server lists only fns without a type, or "tool"; a handler is a bound method,
                    # whose function carries the mark
                    getattr(fn.fn, "__func__", fn.fn)._mcp_type = PAGE_ENDPOINT
        AgentTools(app).register()
    demo.inspector = app  # type: ignore[attr-defined]  # for scripts and tests: the page's engine and state
    return demo


@dataclass(frozen=True)
class Tabs:
    """Every tab's handlers, bound to one ``Inspector``."""

    build: BuildTab
    chat: ChatTab
    trajectories: TrajectoriesTab
    corefacts: CoreFactsTab
    activefacts: ActiveFactsTab
    search: SearchTab
    evaluate: EvaluateTab
    settings: SettingsTab


def _tabs(app: Inspector) -> Tabs:
    """Every tab's handlers, bound to ``app``; the tabs a tab's handlers call into are handed to it here."""
    facts, clusters, built = CoreFactsTab(app), ActiveFactsTab(app), BuildTab(app)
    return Tabs(build=built, chat=ChatTab(app, facts=facts, clusters=clusters),
                           trajectories=TrajectoriesTab(app), corefacts=facts, activefacts=clusters,
                           search=SearchTab(app), evaluate=EvaluateTab(app), settings=SettingsTab(app, build=built))


def _layout(tabs: Tabs, app: Inspector, forget_sessions: bool) -> Page:
    """The page's per-session state (namespace, ``SessionSettings``, ``BuiltSource``) and each tab's
    components, under the tab module's name."""
    states = {"namespace": gr.State(delete_callback=app.forget_session if forget_sessions else None),
              "settings": gr.State(), "source": gr.State()}
    gr.Markdown("# MemSIF inspector\nLong-term memory for LLM agents, built in the open: Topical Segments and "
                "Event Trajectories (Structured Interaction Memory), CoreFacts and ActiveFacts (Dual-Track Fact "
                "Memory). Build from a transcript, then chat with it and see why each answer came out.")
    layouts = [("Build", "build", tabs.build.layout), ("Chat", "chat", chat.layout),
               ("Trajectories", "trajectories", trajectories.layout), ("CoreFacts", "corefacts", corefacts.layout),
               ("ActiveFacts", "activefacts", activefacts.layout), ("Search", "search", search.layout),
               ("Evaluate", "evaluate", evaluate.layout),
               ("Settings", "settings_tab", tabs.settings.layout)]
    components = {}
    for title, name, layout in layouts:
        with gr.Tab(title) as tab:
            components[name] = layout()
        components[name].tab = tab
    return Page(**states, **components)


def _wire_across_tabs(page: Page, tabs: Tabs) -> None:
    """The events that reach every tab: a build (or a rebuild with new settings) redraws the
    trajectories, empties a chat about a replaced memory, sets the chat's example question and
    extracts CoreFacts; a delete empties every tab's views (each tab's ``EMPTY``)."""
    b, c, f, t = page.build, page.chat, page.corefacts, page.trajectories
    per_session = [page.namespace, page.settings]
    built = b.build_btn.click(tabs.build.build, inputs=[b.upload, b.sample, *per_session, page.source, b.live,
                                                        b.dates, b.private],
                              outputs=[page.namespace, page.source, b.summary, b.timeline, b.table],
                              api_name="build", show_progress_on=b.summary)
    rebuilt = tabs.settings.wire(page)
    for done in (built, rebuilt):
        done.success(tabs.trajectories.trajectories_view, inputs=per_session, outputs=trajectories.views(t)[:3],
                     api_name=False)
        done.then(chat.chat_after_build, inputs=page.source, outputs=chat.views(c), api_name=False)
        done.success(lambda src: gr.Textbox(placeholder=src.hint if src else "Ask this memory a question"),
                     inputs=page.source, outputs=c.question, api_name=False)
        done.success(tabs.corefacts.facts_after_build, inputs=[page.source, *per_session],
                     outputs=corefacts.progress_views(f), show_progress_on=f.status, api_name=False)
    ui_tabs = [(build, b), (chat, c), (trajectories, t), (corefacts, f), (activefacts, page.activefacts),
               (search, page.search), (evaluate, page.evaluate)]
    views = {view: empty for tab, ui in ui_tabs for view, empty in zip(tab.views(ui), tab.EMPTY, strict=True)}
    views[page.source] = None
    forget = tabs.build.forget_handler({"summary": b.summary, "confirm": b.forget_confirm, "button": b.forget_btn,
                                        "views": views})
    outputs = [b.summary, *build.views(b), page.source, *[v for v in views if v not in build.views(b)
                                                          and v is not page.source], b.forget_confirm, b.forget_btn]
    b.forget_btn.click(forget, inputs=[page.namespace, b.forget_confirm], outputs=outputs, api_name="forget")
    begun = [*corefacts.views(f), *trajectories.views(t), *activefacts.views(page.activefacts)]
    page.source.change(_begun, inputs=[page.source, f.status], outputs=begun, api_name=False)


def _begun(source: BuiltSource | None, status: str | None = None) -> list:
    """The handler that empties the other tabs' views when a build begins a memory anew (``BuiltSource.building``):
    from then on they show the namespace being built (each tab reads it again when shown), never the memory it
    replaces; ``gr.skip()`` for any other change of the source (the build's end redraws them itself). The
    CoreFacts ``status`` of an extraction stopped by the build stays: the line that says why, or a running one,
    which the stopped job replaces with that line itself (so the two never race)."""
    empty = [*corefacts.EMPTY, *trajectories.EMPTY, *activefacts.EMPTY]
    if source is None or not source.building:
        return [gr.skip()] * len(empty)
    building = (f"Building the memory of {code_span(source.name)}: its CoreFacts are extracted once its Topical "
                "Segments are placed.")
    kept = (status or "").startswith((corefacts.STOPPED, *corefacts.RUNNING))
    return [gr.skip() if kept else building, *empty[1:]]
