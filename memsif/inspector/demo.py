"""The inspector's page: one tab per module of this package (a ``common.Tab`` each, in ``build_demo``'s
list), and the events that cross tabs (a build or a rebuild refreshes the trajectories, starts CoreFact
extraction and sets the chat's example question; an answer redraws the ActiveFacts tab; a delete empties
every view)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import gradio as gr

from memsif import MemSIF, MemSIFError
from memsif.inspector.activefacts import ActiveFactsTab, ActiveFactsViews
from memsif.inspector.build import BuildTab, BuildViews
from memsif.inspector.chat import ChatTab, ChatViews, chat_after_build
from memsif.inspector.common import BuiltSource, Inspector, Page, Tab, Views, model_in_use, new_session
from memsif.inspector.corefacts import RUNNING, STOPPED, CoreFactsTab, CoreFactsViews
from memsif.inspector.evaluate import EvaluateTab
from memsif.inspector.search import SearchTab
from memsif.inspector.settings import SettingsTab, SettingsViews
from memsif.inspector.tools import AgentTools
from memsif.inspector.trajectories import TrajectoriesTab, TrajectoriesViews
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
               extra_models: Sequence[str] = (), extra_tabs: Sequence[Callable[[Inspector], Tab]] = ()) -> gr.Blocks:
    """The inspector over ``engine`` (made once by the caller: ``app.main`` from the environment,
    tests with fakes; its models load on the first visit) as a ``gr.Blocks``: every view is a named
    API endpoint, and the agent tools of ``memsif.inspector.tools`` (``/memory_ingest``,
    ``/memory_ask``, ``/memory_facts``) sit beside them. One ``Inspector`` holds the engine and what
    the page derives from it (``demo.inspector``); every tab's handlers are bound to it. The Settings
    tab starts from ``engine``'s configuration and also offers ``extra_models`` ("backend:model");
    ``extra_tabs`` make more tabs (a ``Tab`` each, from the ``Inspector``), after the others.
    ``forget_sessions`` deletes a session's memory when its browser tab closes (public Spaces); with
    ``mcp`` (launch with ``mcp_server=True``) the page's per-session endpoints stay callable and
    documented (``view_api``) but are left out of MCP's tool list, so an agent sees only the tools
    that take a namespace."""
    app = Inspector(engine, extra_models)
    built, facts, clusters = BuildTab(app), CoreFactsTab(app), ActiveFactsTab(app)
    chat, paths, settings = ChatTab(app, clusters), TrajectoriesTab(app), SettingsTab(app)
    # the page's tabs, in their order: a new tab is its module and one entry here
    tabs: list[Tab] = [built, chat, paths, facts, clusters, SearchTab(app), EvaluateTab(app), settings,
                       *(make(app) for make in extra_tabs)]
    with gr.Blocks(title="MemSIF inspector") as demo:
        page = _layout(tabs, app, forget_sessions)
        demo.load(new_session, outputs=page.namespace, api_name=False).then(
            _preloader(app), outputs=[page[BuildViews].models, page[SettingsViews].running], api_name=False,
            show_progress="hidden")
        for tab in tabs:
            tab.wire(page)
        _wire_builds(page, built, paths, facts, settings)
        _wire_chat(page, chat, facts)
        _wire_delete(page, built)
        if mcp:  # per-session page endpoints mean nothing to an agent: out of MCP's tool list, still in the API docs
            for fn in demo.fns.values():
                if fn.api_visibility == "public" and fn.fn is not None:
                    # Gradio's MCP server lists only fns without a type, or "tool"; a handler is a bound method,
                    # whose function carries the mark
                    getattr(fn.fn, "__func__", fn.fn)._mcp_type = PAGE_ENDPOINT
        AgentTools(app).register()
    demo.inspector = app  # type: ignore[attr-defined]  # for scripts and tests: the page's engine and state
    demo.page = page  # type: ignore[attr-defined]  # for scripts and tests: the page's components
    return demo


def _layout(tabs: Sequence[Tab], app: Inspector, forget_sessions: bool) -> Page:
    """The page's per-session state (namespace, ``SessionSettings``, ``BuiltSource``) and each tab's
    ``Views``, laid out inside its ``gr.Tab``."""
    states = {"namespace": gr.State(delete_callback=app.forget_session if forget_sessions else None),
              "settings": gr.State(), "source": gr.State()}
    gr.Markdown("# MemSIF inspector\nLong-term memory for LLM agents, built in the open: Topical Segments and "
                "Event Trajectories (Structured Interaction Memory), CoreFacts and ActiveFacts (Dual-Track Fact "
                "Memory). Build from a transcript, then chat with it and see why each answer came out.")
    views: dict[type[Views], Views] = {}
    for tab in tabs:
        with gr.Tab(tab.title) as shown:
            made = tab.layout()
        made.tab = shown
        views[type(made)] = made
    return Page(**states, views=views)


def _wire_builds(page: Page, built: BuildTab, paths: TrajectoriesTab, facts: CoreFactsTab,
                 settings: SettingsTab) -> None:
    """A build, and the rebuild with the settings Apply keeps: each redraws the trajectories, empties a
    chat about a replaced memory, sets the chat's example question and extracts CoreFacts."""
    b, c, f, s, t = (page[BuildViews], page[ChatViews], page[CoreFactsViews], page[SettingsViews],
                     page[TrajectoriesViews])
    per_session = [page.namespace, page.settings]
    shown = [page.namespace, page.source, b.summary, b.timeline, b.table]
    made = b.build_btn.click(built.build, inputs=[b.upload, b.sample, *per_session, page.source, b.live, b.dates,
                                                  b.private],
                             outputs=shown, api_name="build", show_progress_on=b.summary)
    applied = s.apply_btn.click(settings.apply_settings, inputs=s.sliders(), outputs=[page.settings, s.status],
                                api_name="settings")
    remade = applied.success(built.rebuild, inputs=[page.namespace, page.source, page.settings], outputs=shown,
                             api_name="rebuild", show_progress_on=b.summary)
    remade.success(lambda: "Rebuilt with these settings (messages written from Chat are not part of the transcript and "
                   "were not rebuilt).", outputs=s.status, api_name=False)
    for done in (made, remade):
        done.success(paths.trajectories_view, inputs=per_session, outputs=[t.graph, t.lanes, t.pick], api_name=False)
        done.then(chat_after_build, inputs=page.source, outputs=list(c.emptied()), api_name=False)
        done.success(lambda src: gr.Textbox(placeholder=src.hint if src else "Ask this memory a question"),
                     inputs=page.source, outputs=c.question, api_name=False)
        done.success(facts.facts_after_build, inputs=[page.source, *per_session], outputs=f.progress(),
                     show_progress_on=f.status, api_name=False)


def _wire_chat(page: Page, chat: ChatTab, facts: CoreFactsTab) -> None:
    """An answer, which also redraws the ActiveFacts tab (its question joined a cluster); a turn written
    into memory is then read for CoreFacts."""
    c, f, a = page[ChatViews], page[CoreFactsViews], page[ActiveFactsViews]
    per_session = [page.namespace, page.settings]
    asked = gr.on([c.question.submit, c.send_btn.click], chat.chat,
                  inputs=[c.question, c.chatbot, c.write, *per_session],
                  outputs=[page.namespace, c.chatbot, c.question, c.trace, a.plot, a.table, c.pick], api_name="ask")
    asked.success(facts.facts_after_chat, inputs=[c.write, *per_session], outputs=f.progress(),
                  show_progress_on=f.status, api_name=False)


#: The tabs a build that begins a memory anew empties (``_begun``), the CoreFacts status first.
BEGUN = (CoreFactsViews, TrajectoriesViews, ActiveFactsViews)


def _wire_delete(page: Page, built: BuildTab) -> None:
    """A delete empties every tab's views (``Views.emptied``) and forgets the source; a build that begins a
    memory anew empties the ``BEGUN`` tabs."""
    b = page[BuildViews]
    emptied = {view: empty for views in page.views.values() for view, empty in views.emptied().items()}
    emptied[page.source] = None
    b.forget_btn.click(built.forget_handler(b, emptied), inputs=[page.namespace, b.forget_confirm],
                       outputs=[b.summary, *emptied, b.forget_confirm, b.forget_btn], api_name="forget")
    page.source.change(_begun, inputs=[page.source, page[CoreFactsViews].status], api_name=False,
                       outputs=[view for kind in BEGUN for view in page[kind].emptied()])


def _begun(source: BuiltSource | None, status: str | None = None) -> list:
    """The handler that empties the ``BEGUN`` tabs' views when a build begins a memory anew (``BuiltSource.building``):
    from then on they show the namespace being built (each tab reads it again when shown), never the memory it
    replaces; ``gr.skip()`` for any other change of the source (the build's end redraws them itself). The
    CoreFacts ``status`` of an extraction stopped by the build stays: the line that says why, or a running one,
    which the stopped job replaces with that line itself (so the two never race)."""
    empty = [value for kind in BEGUN for value in kind.empty()]
    if source is None or not source.building:
        return [gr.skip()] * len(empty)
    building = (f"Building the memory of {code_span(source.name)}: its CoreFacts are extracted once its Topical "
                "Segments are placed.")
    kept = (status or "").startswith((STOPPED, *RUNNING))
    return [gr.skip() if kept else building, *empty[1:]]
