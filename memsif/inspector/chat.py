"""Chat tab: ask this session's memory; each answer comes first, with the demo-model warning and its
best supporting messages, its trace folded below (§3.5); any message the answer rests on opens in
context — its Topical Segment, its Event Trajectory and its place on the φ timeline. Turns can be
written into memory."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

import gradio as gr

from memsif import Answer, Message, Reading, held_by_jobs, interactive, reading_reported
from memsif.inspector.common import (
    EMPTIED,
    BuiltSource,
    ClusterViews,
    Inspector,
    Page,
    SessionSettings,
    Views,
    guard,
    new_session,
)
from memsif.inspector.place import MessagePlace
from memsif.markdown import escape_markdown
from memsif.viz import answer_markdown, best_evidence, trace_markdown

#: Seconds between two updates of a streaming answer in the chat.
STREAM_EVERY_S = 0.1


def answer_sources(answer: Answer | None) -> list[str]:
    """Message ids an answer rests on, best evidence first, then the facts' sources (no repeats)."""
    if answer is None:
        return []
    ids = [i for e in best_evidence(answer.evidence_used) for i in e.source_message_ids]
    ids += [i for f in answer.facts_used for i in f.source_message_ids]
    return list(dict.fromkeys(ids))


def _streamed_answer(eng, question: str, namespace: str) -> Iterator[tuple[str, Answer | None]]:
    """``eng.ask`` in a worker thread: yields (answer text so far, None) as pieces arrive (at most every
    ``STREAM_EVERY_S``), then ("", the Answer). Before the first piece, a model another job holds is said
    (``locks.held_by_jobs``: it lets the answer in at its next step), then each prompt the model reads with
    its wait ("Reading 640 tokens of memory, about 30 s on this CPU…", ``memsif.llm.Reading``).
    Engine errors are raised here."""
    pieces: queue.Queue = queue.Queue()
    box: dict = {}

    def work() -> None:
        try:
            with reading_reported(pieces.put):
                box["answer"] = eng.ask(question, namespace=namespace, on_text=pieces.put)
        except Exception as exc:  # raised again in the handler's thread
            box["error"] = exc
        finally:
            pieces.put(None)

    busy = held_by_jobs()  # the wait before the answer's own reading, said first
    threading.Thread(target=work, daemon=True).start()
    if busy:
        yield (f"⏳ Waiting for the model: {' and '.join(busy)} is using it and lets this answer in at its next "
               "step (a token, or a 64-token piece of its prompt)…"), None
    text, last = "", 0.0
    while (piece := pieces.get()) is not None:
        if isinstance(piece, Reading):
            if not text:
                yield piece.text(), None
            continue
        text += piece
        if time.monotonic() - last >= STREAM_EVERY_S:
            last = time.monotonic()
            yield text.strip().split("\n")[0], None
    if "error" in box:
        raise box["error"]
    yield "", box["answer"]


@dataclass(init=False)
class ChatViews(Views):
    """The Chat tab's components; a delete (or a build replacing the memory it answered from) empties the
    chat, the trace, the message picker, the opened message and its timeline."""

    chatbot: gr.Chatbot = field(metadata={EMPTIED: []})
    trace: gr.JSON = field(metadata={EMPTIED: None})
    pick: gr.Dropdown = field(metadata={EMPTIED: gr.Dropdown(choices=[], value=None, interactive=False)})
    context: gr.Markdown = field(metadata={EMPTIED: ""})
    context_plot: gr.Plot = field(metadata={EMPTIED: None})
    question: gr.Textbox
    send_btn: gr.Button
    write: gr.Checkbox


def chat_after_build(source: BuiltSource | None) -> list:
    """The Chat tab after a build: emptied when the build replaced another memory (its answers were
    about that one), else left as it is. Returns (chat, trace, message picker, message context, plot)."""
    empty = ChatViews.empty()
    return empty if source and source.replaced else [gr.skip()] * len(empty)


@dataclass(frozen=True)
class ChatTab:
    """The Chat tab's handlers, bound to the page's ``Inspector`` (``app``); an answer redraws the
    ActiveFacts tab's clusters (``clusters``)."""

    app: Inspector
    clusters: ClusterViews
    title = "Chat"

    def layout(self) -> ChatViews:
        ui = ChatViews()
        ui.chatbot = gr.Chatbot(label="Chat with this memory (each answer comes with its best supporting messages; "
                                "its trace folds open below it)", height=480)
        with gr.Row():
            ui.question = gr.Textbox(label="Question", placeholder="What did Caroline research?", scale=4,
                                     elem_id="question")
            ui.send_btn = gr.Button("Send", variant="primary", scale=1, elem_id="send-btn")
            ui.write = gr.Checkbox(label="write my messages into memory", value=False)
        ui.pick = gr.Dropdown(label="Open a message of the last answer in context (its segment, trajectory and place "
                              "on the timeline)", choices=[], interactive=False, allow_custom_value=True,
                              elem_id="context-pick")
        ui.context = gr.Markdown(elem_id="message-context")
        ui.context_plot = gr.Plot(label="Where it sits on the φ timeline", elem_id="context-plot")
        with gr.Accordion("Trace of the last answer (raw JSON)", open=False):
            ui.trace = gr.JSON(label="Trace of the last answer (raw)", open=False)
        return ui

    @guard
    def chat(self, question: str, history: list | None, write: bool, namespace: str | None,
             settings: SessionSettings | None):
        """Ask this session's memory. The answer streams into the chat as the model writes it, then comes
        with a collapsible trace (facts and evidence with source ids, sufficiency probability, traced back
        or not, tokens, seconds). With ``write`` the user's message is then written into memory as a new
        turn (CoreFacts follow in ``build_facts``); the model's answers are not, so a wrong answer never
        becomes memory. Yields (namespace, chat history, cleared question box, the trace as JSON, cluster
        figure, cluster rows, the picker of the answer's source messages); while the answer streams, the
        last four are left as they are."""
        if not question or not question.strip():
            gr.Warning("Type a question first.")
            yield (gr.skip(),) * 7
            return
        namespace = namespace or new_session()
        eng = self.app.engine_for(settings)
        history = [*(history or []), {"role": "user", "content": escape_markdown(question)}]  # shown as typed
        result: Answer | None = None
        if eng.has_memory(namespace):
            for partial, result in _streamed_answer(eng, question, namespace):
                if result is None:
                    yield (namespace, [*history, {"role": "assistant", "content": escape_markdown(partial) + " ▌"}], "",
                           gr.skip(), gr.skip(), gr.skip(), gr.skip())
            title, body = trace_markdown(result)
            if in_force := self.app.settings_in_force(settings):
                body += f"\n\n{in_force}"
            history += [{"role": "assistant", "content": answer_markdown(result)},
                        {"role": "assistant", "content": body, "metadata": {"title": title, "status": "done"}}]
        else:
            history.append({"role": "assistant", "content": "No memory yet (or it is still being built): build it in "
                            "the Build tab, or tick “write my messages into memory” and tell me something."})
        if write:
            now = datetime.now().replace(microsecond=0)
            turn = uuid.uuid4().hex[:8]
            turns = [Message(id=f"chat:{turn}:q", namespace=namespace, speaker="user", text=question.strip(), time=now,
                             session_id=f"chat {now.date().isoformat()}")]
            with interactive():  # part of the chat a person waits for, and said so to whoever waits behind it
                eng.ingest(turns, namespace=namespace, core_facts=False)
        sources = answer_sources(result)
        yield (namespace, history, "", result.to_dict() if result is not None else {},  # the raw-JSON trace view
               *self.clusters.clusters_view(namespace, settings),
               gr.Dropdown(choices=sources, value=None, interactive=bool(sources)))

    @guard
    def message_context(self, message_id: str | None, namespace: str | None, settings: SessionSettings | None = None):
        """One message in context (``place.MessagePlace``). Returns (markdown, timeline figure)."""
        return MessagePlace(self.app).show(namespace, settings, message_id)

    def wire(self, page: Page) -> None:
        """The tab's own events (an answer, which also redraws the ActiveFacts tab, is wired by ``demo``)."""
        c = page[ChatViews]
        c.pick.change(self.message_context, inputs=[c.pick, page.namespace, page.settings],
                      outputs=[c.context, c.context_plot], api_name="message")
