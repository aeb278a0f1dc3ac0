"""CoreFacts tab: schema-guided CoreFacts by type and subject with their superseded history, the
append-only operation log (Add / Update / Merge / Supersede / Reject / Noop, and the person's Edit /
Delete / Restore), the source messages of a selected fact (§3.3), and the fields that correct it
(``memsif.facts.corrections``). Facts appear batch by batch while they are extracted."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from memsif import (
    FactOp,
    FactOperation,
    JobCancelled,
    MemSIFError,
    NotFoundError,
    check_cancelled,
    job,
    parse_time,
    record_number,
    waited,
)
from memsif.inspector.common import (
    EMPTIED,
    MESSAGE_COLUMNS,
    BuiltSource,
    Inspector,
    JobProgress,
    Page,
    SessionSettings,
    Views,
    guard,
    in_background,
    model_share,
    until_done,
)
from memsif.inspector.pace import FACTS, TITLES, Countdown, first_unit_text, left_text
from memsif.markdown import escape_html
from memsif.viz import FACT_COLUMNS, OP_COLUMNS, fact_rows, message_rows, op_rows

EMPTY_STATUS = "CoreFacts are extracted after Structured Interaction Memory is built."
#: How the status of an extraction stopped by a delete or a replacing build begins (the reason follows).
STOPPED = "⏹️ CoreFact extraction stopped:"
#: How the status of a running extraction begins (``FactsJobClock.status``): a build
#: that replaces its memory stops it, and its own last status then says so (``STOPPED``).
RUNNING = ("Loading the model and reading", "Extracting CoreFacts:", "Titling the Topical Segments",
           "Second pass:")
CORRECTION_HELP = ("**Correct a fact**: select it in the table, change what is wrong and **Save correction**, or "
                   "**Delete fact** (it leaves every answer; **Restore fact** brings it back). Each correction is an "
                   "operation in the log below (EDIT, DELETE, RESTORE, decided by the person, with the previous "
                   "value); an edit supersedes the old version, which stays in the history, and no later extraction "
                   "changes a correction back.")


@dataclass(init=False)
class CoreFactsViews(Views):
    """The CoreFacts tab's components; a delete empties its status line, the facts, a fact's sources, the log,
    and the correction fields (fact id, type, subject, date, statement, what was done)."""

    status: gr.Markdown = field(metadata={EMPTIED: EMPTY_STATUS})
    facts: gr.Dataframe = field(metadata={EMPTIED: []})
    sources: gr.Dataframe = field(metadata={EMPTIED: []})
    ops: gr.Dataframe = field(metadata={EMPTIED: []})
    fact_id: gr.Textbox = field(metadata={EMPTIED: ""})
    fact_type: gr.Textbox = field(metadata={EMPTIED: ""})
    fact_subject: gr.Textbox = field(metadata={EMPTIED: ""})
    fact_when: gr.Textbox = field(metadata={EMPTIED: ""})
    fact_statement: gr.Textbox = field(metadata={EMPTIED: ""})
    correction: gr.Markdown = field(metadata={EMPTIED: ""})
    extract_btn: gr.Button
    refresh_btn: gr.Button
    op_filter: gr.Dropdown
    subject_filter: gr.Textbox
    save_btn: gr.Button
    delete_btn: gr.Button
    restore_btn: gr.Button

    def progress(self) -> list:
        """What an extraction updates as it goes: the status line, the facts and the log."""
        return [self.status, self.facts, self.ops]


@dataclass
class FactsJobClock:
    """The waits of one CoreFact job, one countdown per stage (``pace``): the batches, the second pass's
    batches, then the model's segment titles; each stage's status line states its own wait."""

    batches: Countdown
    second: Countdown
    titles: Countdown

    def status(self, state: JobProgress, seconds: float, namespace: str, batch_messages: int) -> str:
        """The status line of the job's progress ``state`` after ``seconds``, with the wait of its stage."""
        if state.stage == "titles":
            self.titles.update(state.done, state.total)
            return (f"Titling the Topical Segments with the model: {state.done} of {state.total} · {seconds:.0f} s"
                    f"{left_text(self.titles)}{model_share(namespace)}. Every CoreFact is written (below); until "
                    "its model title a segment keeps the one its key terms gave it.")
        if "second pass" in state.stage:
            self.second.update(state.done, state.total)
            return (f"Second pass: reading again the batches where the checks refused every fact of a speaker "
                    f"whose messages were cited, {state.done} of {state.total} · {seconds:.0f} s"
                    f"{left_text(self.second)}{model_share(namespace)}. The first pass's facts are all below.")
        if not state.total:
            return (f"Loading the model and reading the new messages for CoreFacts… {seconds:.0f} s"
                    f"{first_unit_text(self.batches)}{model_share(namespace)}")
        self.batches.update(state.done, state.total)
        return (f"Extracting CoreFacts: batch {state.done} of {state.total} (up to {batch_messages} messages each) · "
                f"{seconds:.0f} s{left_text(self.batches)}{model_share(namespace)}. Facts appear below as each batch "
                "is written.")

    def finish(self) -> None:
        """Record each stage's measured pace for the next jobs (``Countdown.finish``)."""
        for countdown in (self.batches, self.second, self.titles):
            countdown.finish()


def _fact(eng, namespace: str | None, fact_id: str | None):
    """The CoreFact (history included) whose id ``fact_id`` names, in any case; None when there is none."""
    wanted = (fact_id or "").strip().upper()
    return next((f for f in eng.facts(namespace, history=True) if f.id == wanted), None)


def _day(fact) -> str:
    """A CoreFact's event date as the correction field shows it ("2023-05-08"; "" without one)."""
    return fact.event_time.date().isoformat() if fact.event_time else ""


@dataclass(frozen=True)
class CoreFactsTab:
    """The CoreFacts tab's handlers, bound to the page's ``Inspector`` (``app``)."""

    app: Inspector
    title = "CoreFacts"

    def layout(self) -> CoreFactsViews:
        ui = CoreFactsViews()
        ui.status = gr.Markdown(EMPTY_STATUS, elem_id="corefacts-status")
        with gr.Row():
            ui.extract_btn = gr.Button("Extract CoreFacts now")
            ui.refresh_btn = gr.Button("Refresh")
            ui.op_filter = gr.Dropdown([("all operations", ""), *((op.value, op.value) for op in FactOp)],
                                       value="", label="Operation")
            ui.subject_filter = gr.Textbox(label="Subject")
        ui.facts = gr.Dataframe(headers=FACT_COLUMNS, wrap=True, elem_id="corefacts-table", max_height=400,
                                label="CoreFacts by type and subject (select one for its sources)",
                                column_widths=["5%", "7%", "9%", "34%", "15%", "9%", "8%", "13%"])
        ui.sources = gr.Dataframe(headers=MESSAGE_COLUMNS, label="Source messages of the selected fact", wrap=True)
        with gr.Group(elem_id="fact-correction"):
            gr.Markdown(CORRECTION_HELP)
            with gr.Row():
                ui.fact_id = gr.Textbox(label="Fact (select a row, or type its id and press Enter)", elem_id="fact-id",
                                        scale=1)
                ui.fact_type = gr.Textbox(label="Type", elem_id="fact-type", scale=1)
                ui.fact_subject = gr.Textbox(label="Subject", elem_id="fact-subject", scale=1)
                ui.fact_when = gr.Textbox(label="Event date (e.g. 2023-05-08)", elem_id="fact-when", scale=1)
            ui.fact_statement = gr.Textbox(label="Statement", lines=2, elem_id="fact-statement")
            with gr.Row():
                ui.save_btn = gr.Button("Save correction", elem_id="fact-save")
                ui.delete_btn = gr.Button("Delete fact", elem_id="fact-delete", variant="stop")
                ui.restore_btn = gr.Button("Restore fact", elem_id="fact-restore")
            ui.correction = gr.Markdown(elem_id="fact-correction-status")
        ui.ops = gr.Dataframe(headers=OP_COLUMNS, label="Operation log (append-only)", wrap=True, max_height=400,
                              elem_id="fact-ops",
                              column_widths=["4%", "8%", "27%", "7%", "42%", "12%"])
        return ui

    @guard
    def build_facts(self, namespace: str | None, settings: SessionSettings | None, progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
        """CoreFact extraction and consolidation over every message no extraction has read yet (§3.3);
        minutes on the 135M model. Yields (status, fact rows, operation rows), the rows again after
        every written batch."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None:
            yield "No memory yet: build it first.", [], []
            return

        def work(report):
            with job(namespace, "facts"):  # cancellable from its start, also while it waits for the namespace
                done = eng.build_core_facts(namespace, progress=report)
                check_cancelled()  # its memory replaced after its last model call: it stopped, it did not finish
                return done

        chat_waits = functools.partial(waited, namespace)  # each countdown stands still while a chat is served
        wave = eng.config.facts.fact_parallel  # batches end a wave at a time; the first is read alone (facts.core)
        clock = FactsJobClock(batches=self.app.pace.countdown(FACTS, wave=wave, paused=chat_waits, first_wave=1),
                              second=self.app.pace.countdown(FACTS, wave=wave, paused=chat_waits),
                              titles=self.app.pace.countdown(TITLES, wave=wave, paused=chat_waits))
        describe = functools.partial(clock.status, namespace=namespace,
                                     batch_messages=eng.config.facts.fact_batch_messages)
        logged = -1

        def shown(text: str) -> tuple:
            nonlocal logged
            try:
                written = len(eng.fact_log(namespace))
            except NotFoundError:  # deleted meanwhile: the job's own end (JobCancelled) says why
                written = logged
            if written == logged:
                return text, gr.skip(), gr.skip()
            logged = written  # a batch was written: show its facts and operations now
            return (text, *self.facts_view(namespace, None, None, settings))

        try:
            report = yield from until_done(in_background(work, progress, describe), shown)
            clock.finish()
        except (JobCancelled, NotFoundError) as exc:  # its memory was replaced or deleted: a reason, no error
            reason = str(exc) if isinstance(exc, JobCancelled) else "this session's memory was deleted or replaced"
            yield f"{STOPPED} {reason}.", *self.facts_view(namespace, None, None, settings)
            return
        facts, ops = self.facts_view(namespace, None, None, settings)
        counts = ", ".join(f"{k} {v}" for k, v in sorted(report.fact_ops.items())) or "no new operations"
        if report.fact_ops.get("REJECT"):
            counts += (" (REJECT: candidates the grounding gate, the claim rules or the model's verification turned "
                       "away, as not said by the messages they cite; filter the log by REJECT for the reasons)")
        yield (f"**{report.core_facts} current CoreFacts**; this pass: {counts}; {report.fact_llm_calls} LLM calls, "
               f"{report.fact_errors} errors (see the log)."), facts, ops

    def facts_after_build(self, source: BuiltSource | None, namespace: str | None, settings: SessionSettings | None,
                          progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
        """``build_facts`` chained after a build: not started when the build failed (the status says
        why and how to start it). Yields as ``build_facts``."""
        if source and source.failed:
            yield ("CoreFacts were not extracted: the build did not finish. **Extract CoreFacts** extracts them for "
                   "the messages that were built."), gr.skip(), gr.skip()
            return
        yield from self.build_facts(namespace, settings, progress)

    def facts_after_chat(self, write: bool, namespace: str | None, settings: SessionSettings | None,
                         progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
        """``build_facts`` chained after a chat turn written into memory (``write``). Yields as ``build_facts``."""
        if not write:
            yield gr.skip(), gr.skip(), gr.skip()
            return
        yield from self.build_facts(namespace, settings, progress)

    @guard
    def facts_view(self, namespace: str | None, op: str | None, subject: str | None,
                   settings: SessionSettings | None = None):
        """CoreFacts by type and subject (with superseded history) and the operation log, filtered by
        operation and subject. Returns (fact rows, operation rows)."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None:
            return [], []
        facts = sorted(eng.facts(namespace, history=True),
                       key=lambda f: (f.type, f.subject.lower(), record_number(f.id)))
        if subject:
            facts = [f for f in facts if f.subject.lower() == subject.strip().lower()]
        return fact_rows(facts), op_rows(eng.fact_log(namespace, op=op or None, subject=subject or None))

    def fact_sources(self, namespace: str | None, settings: SessionSettings | None, evt: gr.SelectData):
        """The source messages of the CoreFact in the selected row (provenance), and the row's fact in
        the correction fields. Returns (source rows, fact id, type, subject, event date, statement,
        correction status)."""
        eng = self.app.session_engine(namespace, settings)
        row = evt.row_value if getattr(evt, "row_value", None) else None
        if eng is None or evt.index is None or not row:
            return [], "", "", "", "", "", ""
        ids = [i.strip() for i in str(row[FACT_COLUMNS.index("sources")]).split(",") if i.strip()]
        fields = [str(row[FACT_COLUMNS.index(c)]) for c in ("fact", "type", "subject", "said on", "statement")]
        return message_rows(ids, eng.messages(namespace)), *fields, ""

    def load_fact(self, namespace: str | None, settings: SessionSettings | None, fact_id: str):
        """The fact whose id was typed, in the correction fields. Returns (fact id, type, subject, event date,
        statement, correction status)."""
        eng = self.app.session_engine(namespace, settings)
        if (fact := _fact(eng, namespace, fact_id) if eng else None) is None:
            return fact_id, "", "", "", "", f"No CoreFact {escape_html(repr(fact_id))} in this memory: see the table."
        return fact.id, fact.type, fact.subject, _day(fact), fact.statement, f"{fact.id} is {fact.status}."

    def save_fact(self, namespace: str | None, settings: SessionSettings | None, fact_id: str, type_: str,
                  subject: str, when: str, statement: str, op: str | None, subject_filter: str | None):
        """EDIT the selected CoreFact with the fields that differ from it. Returns (what was done or why
        not, the fact id now, fact rows, operation rows)."""
        def edit(eng, fact_id: str) -> FactOperation:
            if (fact := _fact(eng, namespace, fact_id)) is None:
                raise NotFoundError(f"No CoreFact {fact_id!r} in this memory: select one in the table.")
            try:
                date = parse_time(when) if when.strip() and when.strip() != _day(fact) else None
            except ValueError as exc:
                raise MemSIFError(f"the event date {when!r} is not a date ({exc}): write e.g. 2023-05-08.") from exc
            return eng.edit_fact(namespace, fact.id, statement=statement if statement != fact.statement else None,
                                 subject=subject if subject != fact.subject else None,
                                 type=type_ if type_ != fact.type else None, when=date)
        return self._correct(namespace, settings, fact_id, edit, op, subject_filter)

    def delete_fact(self, namespace: str | None, settings: SessionSettings | None, fact_id: str, op: str | None,
                    subject_filter: str | None):
        """DELETE the selected CoreFact. Returns as ``save_fact``."""
        return self._correct(namespace, settings, fact_id, lambda eng, fid: eng.delete_fact(namespace, fid),
                             op, subject_filter)

    def restore_fact(self, namespace: str | None, settings: SessionSettings | None, fact_id: str, op: str | None,
                     subject_filter: str | None):
        """RESTORE the selected deleted CoreFact. Returns as ``save_fact``."""
        return self._correct(namespace, settings, fact_id,
                             lambda eng, fid: eng.restore_fact(namespace, fid), op, subject_filter)

    def _correct(self, namespace: str | None, settings: SessionSettings | None, fact_id: str,
                 change: Callable[[Any, str], FactOperation], op: str | None, subject_filter: str | None):
        """``change(engine, fact id)`` → its operation (the last id is the fact after it); a refusal is said
        in the status line, with nothing changed."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None or not (fact_id or "").strip():
            return "Select a fact in the table first.", fact_id, gr.skip(), gr.skip()
        try:
            last = change(eng, fact_id.strip())
        except MemSIFError as exc:
            return f"Not changed: {escape_html(str(exc))}", fact_id, gr.skip(), gr.skip()
        return (f"**{last.op}** {', '.join(last.fact_ids)}: {escape_html(last.reason)}", last.fact_ids[-1],
                *self.facts_view(namespace, op, subject_filter, settings))

    def wire(self, page: Page) -> None:
        """The tab's own events."""
        f, namespace, settings = page[CoreFactsViews], page.namespace, page.settings
        f.extract_btn.click(self.build_facts, inputs=[namespace, settings], outputs=f.progress(),
                            show_progress_on=f.status, api_name="build_facts")
        filtered = [namespace, f.op_filter, f.subject_filter, settings]
        f.refresh_btn.click(self.facts_view, inputs=filtered, outputs=[f.facts, f.ops], api_name="facts")
        # the tab shown again: the facts written meanwhile (an extraction writes each batch as it is verified)
        for trigger in (f.tab.select, f.op_filter.change, f.subject_filter.submit):
            trigger(self.facts_view, inputs=filtered, outputs=[f.facts, f.ops], api_name=False)
        fields = [f.fact_id, f.fact_type, f.fact_subject, f.fact_when, f.fact_statement, f.correction]
        f.facts.select(self.fact_sources, inputs=[namespace, settings], outputs=[f.sources, *fields], api_name=False)
        f.fact_id.submit(self.load_fact, inputs=[namespace, settings, f.fact_id], outputs=fields, api_name=False)
        done = [f.correction, f.fact_id, f.facts, f.ops]
        f.save_btn.click(self.save_fact, api_name=False, outputs=done, inputs=[
            namespace, settings, f.fact_id, f.fact_type, f.fact_subject, f.fact_when, f.fact_statement, f.op_filter,
            f.subject_filter])
        for button, handler in ((f.delete_btn, self.delete_fact), (f.restore_btn, self.restore_fact)):
            button.click(handler, inputs=[namespace, settings, f.fact_id, f.op_filter, f.subject_filter], outputs=done,
                         api_name=False)
