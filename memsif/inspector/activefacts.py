"""ActiveFacts tab: the candidate clusters C_k that questions accumulate, as points (Score_src,
Score_qry) against θ_s / θ_q, their table, the source messages R_k of a selected cluster (§3.4), and
the buttons that delete or restore its ActiveFact (a person's correction, ``memsif.facts.corrections``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import gradio as gr

from memsif import MemSIFError
from memsif.inspector.common import EMPTIED, MESSAGE_COLUMNS, Inspector, Page, SessionSettings, Views, guard
from memsif.markdown import escape_html
from memsif.viz import cluster_scatter, message_rows

CLUSTER_COLUMNS = ["cluster", "subject (speaker: topic)", "statement", "Score_src", "Score_qry", "|R|", "queries",
                   "ActiveFact", "sources"]

NOTATION_ACTIVE = """
- A **candidate cluster C_k** gathers the evidence statements (X_k) that answered questions (Q_k) about one
  speaker's topic (**subject** = speaker: its two most frequent key entities); **|R|** counts the distinct source
  messages R_k of those statements.
- **Score_src** (Eq. 2) = (1 − 1/|R|) · coherence of X_k: supported by several sources that agree.
  **Score_qry** (Eq. 3) = (1 − 1/|Q|) · coherence of Q_k: asked for repeatedly.
- A cluster past **θ_s** (vertical line) and **θ_q** (horizontal line) is promoted to an **ActiveFact** (a star);
  its statement is the most central of X_k and stays until another is clearly more central.
"""


@dataclass(init=False)
class ActiveFactsViews(Views):
    """The ActiveFacts tab's components; a delete empties the clusters' plot, their table and a cluster's sources."""

    plot: gr.Plot = field(metadata={EMPTIED: None})
    table: gr.Dataframe = field(metadata={EMPTIED: []})
    sources: gr.Dataframe = field(metadata={EMPTIED: []})
    refresh_btn: gr.Button
    active_id: gr.Textbox
    delete_btn: gr.Button
    restore_btn: gr.Button
    correction: gr.Markdown


@dataclass(frozen=True)
class ActiveFactsTab:
    """The ActiveFacts tab's handlers, bound to the page's ``Inspector`` (``app``)."""

    app: Inspector
    title = "ActiveFacts"

    def layout(self) -> ActiveFactsViews:
        ui = ActiveFactsViews()
        ui.refresh_btn = gr.Button("Refresh")
        ui.plot = gr.Plot(label="Candidate clusters: Score_src vs Score_qry (Eq. 4)", elem_id="clusters")
        ui.table = gr.Dataframe(headers=CLUSTER_COLUMNS, label="Candidate clusters C_k (select one for its source "
                                "messages R_k)", wrap=True, elem_id="clusters-table",
                                column_widths=["7%", "12%", "23%", "9%", "9%", "4%", "19%", "10%", "7%"])
        ui.sources = gr.Dataframe(headers=MESSAGE_COLUMNS, label="Source messages R_k of the selected cluster",
                                  wrap=True)
        with gr.Row():
            ui.active_id = gr.Textbox(label="ActiveFact of the selected cluster", interactive=False,
                                      elem_id="active-id")
            ui.delete_btn = gr.Button("Delete ActiveFact", variant="stop", elem_id="active-delete")
            ui.restore_btn = gr.Button("Restore ActiveFact", elem_id="active-restore")
        ui.correction = gr.Markdown(elem_id="active-correction-status")
        with gr.Accordion("What the scores mean", open=False):
            gr.Markdown(NOTATION_ACTIVE)
        return ui

    @guard
    def clusters_view(self, namespace: str | None, settings: SessionSettings | None = None):
        """ActiveFact candidate clusters as points (Score_src, Score_qry) against θ_s / θ_q, and their table."""
        eng = self.app.session_engine(namespace, settings)
        clusters = eng.clusters(namespace) if eng else []
        deleted = {a.id for a in eng.active_facts(namespace, deleted=True) if a.status == "deleted"} if eng else set()
        eng = eng or self.app.engine_for(settings)

        def promoted(c) -> str:
            said = c.active_fact_id or "not promoted"
            return f"{said} (deleted by a person)" if said in deleted else said

        rows = [[c.id, c.label or c.subject, c.statement or c.central_statement or "", round(c.score_src, 3),
                 round(c.score_qry, 3), len(c.sources), " | ".join(c.queries), promoted(c), ", ".join(c.sources)]
                for c in clusters]
        return cluster_scatter(clusters, eng.config.method.theta_src, eng.config.method.theta_qry), rows

    def cluster_sources(self, namespace: str | None, settings: SessionSettings | None, evt: gr.SelectData):
        """The source messages R_k of the selected candidate cluster and its ActiveFact's id ("" when
        it is not promoted)."""
        eng = self.app.session_engine(namespace, settings)
        row = evt.row_value if getattr(evt, "row_value", None) else None
        if eng is None or not row:
            return [], ""
        ids = [i.strip() for i in str(row[CLUSTER_COLUMNS.index("sources")]).split(",") if i.strip()]
        promoted = str(row[CLUSTER_COLUMNS.index("ActiveFact")]).split(" ")[0]
        return message_rows(ids, eng.messages(namespace)), promoted if promoted.startswith("A") else ""

    def set_deleted(self, namespace: str | None, settings: SessionSettings | None, active_id: str, deleted: bool):
        """DELETE (``deleted``) or RESTORE the selected cluster's ActiveFact. Returns (what was done or why
        not, the plot, the table)."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None or not (active_id or "").strip():
            return "Select a cluster whose ActiveFact column names one.", gr.skip(), gr.skip()
        try:
            op = eng.delete_fact(namespace, active_id) if deleted else eng.restore_fact(namespace, active_id)
        except MemSIFError as exc:
            return f"Not changed: {escape_html(str(exc))}", gr.skip(), gr.skip()
        return f"**{op.op}** {escape_html(op.reason)}", *self.clusters_view(namespace, settings)

    def wire(self, page: Page) -> None:
        """The tab's own events."""
        a, per_session = page[ActiveFactsViews], [page.namespace, page.settings]
        for trigger, api_name in ((a.refresh_btn.click, "clusters"), (a.tab.select, False)):
            trigger(self.clusters_view, inputs=per_session, outputs=[a.plot, a.table], api_name=api_name)
        a.table.select(self.cluster_sources, inputs=per_session, outputs=[a.sources, a.active_id], api_name=False)
        for button, deleted in ((a.delete_btn, True), (a.restore_btn, False)):
            button.click(functools.partial(self.set_deleted, deleted=deleted), inputs=[*per_session, a.active_id],
                         outputs=[a.correction, a.plot, a.table], api_name=False)
