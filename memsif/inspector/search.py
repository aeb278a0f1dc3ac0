"""Search tab: find CoreFacts, ActiveFacts and messages by words and by meaning (``MemSIF.search``:
the facts' cosine, the messages' hybrid sentence search), with dates and speakers; a selected message
opens in its Topical Segment, its Event Trajectory and the timeline (``place.MessagePlace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr

from memsif import Found, MemSIFError
from memsif.inspector.common import EMPTIED, Inspector, Page, SessionSettings, Views, guard
from memsif.inspector.place import MessagePlace
from memsif.markdown import escape_html
from memsif.viz import counted

FOUND_COLUMNS = ["kind", "id", "date", "speaker", "text", "score", "found by", "Topical Segment", "Event Trajectory"]
KINDS = {"core": "CoreFact", "active": "ActiveFact", "message": "message"}


@dataclass(init=False)
class SearchViews(Views):
    """The Search tab's components; a delete empties its status, results, where a message sits and the timeline."""

    status: gr.Markdown = field(metadata={EMPTIED: ""})
    found: gr.Dataframe = field(metadata={EMPTIED: []})
    place: gr.Markdown = field(metadata={EMPTIED: ""})
    timeline: gr.Plot = field(metadata={EMPTIED: None})
    query: gr.Textbox
    search_btn: gr.Button


def found_rows(found: list[Found]) -> list[list]:
    """One row per thing found (``FOUND_COLUMNS``)."""
    return [[KINDS[f.kind], f.id, f.time.date().isoformat() if f.time else "", f.speaker, f.text, f.score,
             ", ".join(f.found_by), f.segment_id or "", f.trajectory_id or ""] for f in found]


@dataclass(frozen=True)
class SearchTab:
    """The Search tab's handlers, bound to the page's ``Inspector`` (``app``)."""

    app: Inspector
    title = "Search"

    def layout(self) -> SearchViews:
        ui = SearchViews()
        with gr.Row():
            ui.query = gr.Textbox(label="Find in this memory (words, names, or what it was about)", scale=4,
                                  elem_id="search-query")
            ui.search_btn = gr.Button("Search", scale=1, elem_id="search-btn")
        ui.status = gr.Markdown(elem_id="search-status")
        ui.found = gr.Dataframe(headers=FOUND_COLUMNS, label="Found (facts by meaning; messages by words and meaning — "
                                "select a message to open it where it sits)", wrap=True, max_height=420,
                                elem_id="search-found")
        ui.place = gr.Markdown(elem_id="search-place")
        ui.timeline = gr.Plot(label="Where it sits in the timeline", elem_id="search-timeline")
        return ui

    def search(self, namespace: str | None, settings: SessionSettings | None, query: str):
        """Facts and messages of this session's memory for ``query``. Returns (status, rows, place, timeline)."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None:
            return "No memory yet: build one in the Build tab first.", [], "", None
        try:
            found = eng.search(namespace, query)
        except MemSIFError as exc:
            return escape_html(str(exc)), [], "", None
        facts = sum(f.kind != "message" for f in found)
        said = (f"{counted(facts, 'fact')} and {counted(len(found) - facts, 'message')} for "
                f"**{escape_html(' '.join(query.split()))}**"
                if found else "Nothing found.")
        return said, found_rows(found), "", None

    @guard
    def open_found(self, namespace: str | None, settings: SessionSettings | None, evt: gr.SelectData):
        """The selected message in its Topical Segment, Event Trajectory and the timeline. Returns (markdown,
        timeline figure)."""
        row = evt.row_value if getattr(evt, "row_value", None) else None
        if not row or row[0] != KINDS["message"]:
            return "Select a message row to see where it sits.", None
        return MessagePlace(self.app).show(namespace, settings, str(row[1]))

    def wire(self, page: Page) -> None:
        """The tab's own events."""
        s, per_session = page[SearchViews], [page.namespace, page.settings]
        shown = [s.status, s.found, s.place, s.timeline]
        s.search_btn.click(self.search, inputs=[*per_session, s.query], outputs=shown, api_name="search")
        s.query.submit(self.search, inputs=[*per_session, s.query], outputs=shown, api_name=False)
        s.found.select(self.open_found, inputs=per_session, outputs=[s.place, s.timeline], api_name=False)
