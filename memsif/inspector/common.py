"""What every tab of the inspector shares: the ``Inspector`` (the engine the page was handed and what
the page derives from it), the ``Tab`` contract with its ``Views`` and the ``Page``, typed per-session state
(``SessionSettings``, ``BuiltSource``), namespaces, error handling, and background work with progress
that says where the job stands on the shared model (``memsif.locks``)."""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import gradio as gr

from memsif import (
    LLM_BACKENDS,
    PACKAGED_MODELS,
    MemSIF,
    MemSIFConfig,
    MemSIFError,
    NamespaceExport,
    ProgressFn,
    cancel,
    queue_position,
    read_export,
    runtime_of,
    sharing,
)
from memsif.inspector.pace import PaceBook
from memsif.markdown import code_span, escape_html

log = logging.getLogger(__name__)

#: The bundled example transcript (LoCoMo conv-26) and its memory prebuilt by the default models.
EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "locomo-conv-26.json"
EXAMPLE_MEMORY = EXAMPLE.with_name("example-memory-conv-26.json.gz")


@dataclass(frozen=True)
class SessionSettings:
    """A browser session's method settings (Settings tab; the paper's Table 13 names): one α for
    segments and trajectories (Eq. 1), τ_split, τ_merge, construction Top-K, θ_s, θ_q, and the LLM as
    "backend:model". Hashable: the derived engine of each distinct setting is made once."""

    alpha: float
    tau_split: float
    tau_merge: float
    construction_top_k: int
    theta_src: float
    theta_qry: float
    model: str = ""

    def over(self, base: MemSIFConfig) -> MemSIFConfig:
        """``base`` with these settings applied.

        Raises:
            gr.Error: a model choice that is not "backend:model".
            ConfigError: a value out of range.
        """
        changes: dict[str, Any] = {name: getattr(self, key) for key, (_, name) in SETTING_FIELDS.items()}
        changes["alpha_trajectory"] = self.alpha  # one α for segments and trajectories (Table 13)
        if self.model:
            backend, _, model = self.model.partition(":")
            if backend not in LLM_BACKENDS or not model:
                raise gr.Error(escape_html(f"Model choice {self.model!r} is not 'backend:model' with backend in "
                                           f"{LLM_BACKENDS}."))
            if backend != base.model.llm_backend or model != base.model.llm_model:
                changes.update(llm_backend=backend, llm_model=model, llm_gguf_file="")
        return base.replace(**changes)


@dataclass
class BuiltSource:
    """What a session's memory was built from (``gr.State``): the transcript's ``path`` and chosen
    ``sample`` (None: all), its file ``name``, sample ids, an example question (``hint``), how many
    questions it carries, the conversation titles an export gave (sample id → title); and how the
    build went: ``building`` (its structure being placed now), from the ``prebuilt`` example,
    ``replaced`` another memory, or ``failed`` (why)."""

    path: str
    sample: str | None
    name: str
    samples: list[str]
    hint: str = "Ask this memory a question"
    questions: int = 0
    session_titles: dict[str, str] = field(default_factory=dict)
    prebuilt: bool = False
    replaced: bool = False
    failed: str | None = None
    building: bool = False


def remove_evaluation_copies(eng: MemSIF) -> list[str]:
    """Delete the Evaluate tab's copies a crashed process left in the store (``eval_namespace``);
    returns their names."""
    left = [ns for ns in eng.namespaces() if ns.startswith("ui-") and ns.endswith("-eval")]
    for ns in left:
        eng.delete_namespace(ns)
        log.warning("removed %s, an evaluation copy a stopped process left in the store", ns)
    return left


#: The Settings sliders: ``SessionSettings`` field → (label, config field).
SETTING_FIELDS = MappingProxyType({
    "alpha": ("α", "alpha_segment"), "tau_split": ("τ_split", "tau_split"), "tau_merge": ("τ_merge", "tau_merge"),
    "construction_top_k": ("Top-K", "construction_top_k"), "theta_src": ("θ_s", "theta_src"),
    "theta_qry": ("θ_q", "theta_qry")})


def new_session() -> str:
    """A namespace for this browser session, made on the server (never taken from the client)."""
    return "ui-" + uuid.uuid4().hex[:12]


def eval_namespace(namespace: str) -> str:
    """The copy of a session's memory the Evaluate tab asks its questions of."""
    return f"{namespace}-eval"


def refusal(message: str) -> gr.Error:
    """The page's (and the tools') one-line refusal: shown to the user, logged as one line, no traceback
    in the server log (an expected refusal is not a server fault)."""
    log.info("refused: %s", message.splitlines()[0][:200] if message else "")
    return gr.Error(message, print_exception=False)


def guard(fn):
    """Engine errors become a visible Gradio error that says what to do, its text shown as written
    (Gradio's pop-up renders HTML, and an error may quote a transcript or a model's output). The
    wrapper keeps ``fn``'s name, docstring, signature and type hints (Gradio reads gr.Progress
    defaults and API/MCP descriptions from them)."""
    return _guarded(fn, escape_html)


def tool_guard(fn):
    """``guard`` for the agent tools: the error's text is handed to the agent unchanged (it is read as
    text, not rendered)."""
    return _guarded(fn, str)


def _guarded(fn, said: Callable[[str], str]):
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):  # for generator handlers (streaming)
            try:
                return (yield from fn(*args, **kwargs))
            except MemSIFError as exc:
                raise refusal(said(str(exc))) from exc
        return wrapped

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemSIFError as exc:
            raise refusal(said(str(exc))) from exc
    return plain


@dataclass(frozen=True)
class JobProgress:
    """Where a background job stands: ``done`` of ``total`` in ``stage`` (as its ProgressFn said)."""

    done: int = 0
    total: int = 0
    stage: str = "starting"


#: The progress text of a background job before it counts anything.
WAITING = "getting ready…"


def in_background(work: Callable[[ProgressFn], Any], progress: gr.Progress,
                  describe: Callable[[JobProgress, float], str]) -> Iterator[tuple[str, Any]]:
    """Run ``work(progress_callback)`` in a thread; yield ("status", text) every half second while it
    runs, then ("done", result). Engine errors are raised here, in the caller's thread."""
    state = JobProgress()
    out: dict[str, Any] = {}

    def report(done: int, total: int, stage: str) -> None:
        nonlocal state
        state = JobProgress(done, total, stage)  # one assignment: the reader never sees half an update

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
        now = state
        if now.total:
            progress(now.done / now.total, desc=f"{now.stage} {now.done}/{now.total}")
        else:  # nothing counted yet (models loading, a memory being copied): no "0/0 - 0.0 %" bar
            progress(None, desc=WAITING)
        yield "status", describe(now, time.perf_counter() - start)
    if "error" in out:
        raise out["error"]
    yield "done", out["result"]


def until_done(steps: Iterator[tuple[str, Any]], shown: Callable[[str], Any]) -> Generator[Any, None, Any]:
    """Each ("status", text) of ``steps`` (``in_background``, ``Inspector.loading_engine``) yielded as
    ``shown(text)``; returns the value of its ("done", value)."""
    for kind, value in steps:
        if kind == "done":
            return value
        yield shown(value)
    raise RuntimeError("the steps ended without a result")


def model_in_use(eng: MemSIF) -> str:
    """Markdown naming the loaded model and what runs it ("… on llama.cpp · CPU library zen4 …"), with
    the fallback warning when the configured back-end could not run (``Runtime.warning``)."""
    runtime = runtime_of(eng.llm)
    line = f"Model: **{eng.llm.name or '?'}** on {runtime.line()}."
    return f"{line}\n\n{runtime.warning()}" if runtime.fallback_from else line


def model_share(namespace: str) -> str:
    """What this session's job waits for on the shared model, or with how many others it shares it."""
    if waiting := queue_position(namespace):
        return f" · ⏳ {waiting}"
    others = sharing(namespace)
    return f" · the model is shared with {others} other job(s), call by call" if others else ""


#: Columns of the message tables (sources of a fact or a cluster).
MESSAGE_COLUMNS = ["message", "session", "time", "speaker", "text"]


#: The ``field`` metadata of a ``Views`` field that a delete empties: ``field(metadata={EMPTIED: value})``.
EMPTIED = "emptied"


@dataclass(init=False)
class Views:
    """A tab's components: one dataclass per tab, a typed field per component that the tab's ``layout`` sets,
    and its ``gr.Tab`` (``tab``, set by ``demo``). A delete of the session's memory empties each field declared
    ``= field(metadata={EMPTIED: value})`` to ``value``."""

    tab: gr.Tab

    @classmethod
    def empty(cls) -> list[Any]:
        """The values a delete empties the views to, in field order."""
        return [f.metadata[EMPTIED] for f in fields(cls) if EMPTIED in f.metadata]

    def emptied(self) -> dict[Any, Any]:
        """Each view a delete empties → its value then (``empty``), in field order."""
        return {getattr(self, f.name): f.metadata[EMPTIED] for f in fields(self) if EMPTIED in f.metadata}


V = TypeVar("V", bound=Views)


@dataclass(frozen=True)
class Page:
    """The page of one inspector: the per-session state (the session's namespace, its ``SessionSettings`` and
    ``BuiltSource``) and each tab's ``Views``, found by their class (``page[BuildViews].summary``).
    ``demo.py`` makes the page."""

    namespace: gr.State
    settings: gr.State
    source: gr.State
    views: Mapping[type[Views], Views]

    def __getitem__(self, kind: type[V]) -> V:
        """The views of the tab whose ``layout`` made a ``kind``."""
        return cast(V, self.views[kind])


@runtime_checkable
class Tab(Protocol):
    """A tab of the inspector, one module each: a class of handlers bound to the page's ``Inspector`` with
    the tab's ``title``, its components (``layout``, called inside its ``gr.Tab``) and its own events (``wire``,
    its views being ``page[ItsViews]``). No tab imports another: ``demo.py`` wires the events whose outputs
    or chains reach another tab, and hands a tab the handlers it calls of another (``ClusterViews``)."""

    title: str

    def layout(self) -> Views: ...

    def wire(self, page: Page) -> None: ...


class ClusterViews(Protocol):
    """The ActiveFacts tab's redraw (an answer's question joined a cluster)."""

    def clusters_view(self, namespace: str | None, settings: SessionSettings | None = None) -> Any: ...


class Inspector:
    """The inspector's one engine and what the page derives from it (``build_demo`` makes one; tests
    make one over an engine of fakes): the engine it was handed, whether its models are loaded, the
    engines derived for sessions with other settings (over the same store), the extra models the
    Settings tab offers, the pace of builds and extractions this process measured
    (``pace.PaceBook``), and the prebuilt example memory. Every tab's handlers are bound to it.

    Args:
        engine: the served engine (embedded Qdrant locks its folder: one per process); its models load
            on first use.
        extra_models: "backend:model" entries offered in Settings beside the configured and packaged ones.
        example_memory: the prebuilt example's export file (``EXAMPLE_MEMORY``), read once on first use.
    """

    def __init__(self, engine: MemSIF, extra_models: Sequence[str] = (),
                 example_memory: Path = EXAMPLE_MEMORY) -> None:
        self.served = engine
        self.extra_models = tuple(extra_models)
        self.pace = PaceBook()
        self.example_memory_path = example_memory
        self._loaded = False
        self._lock = threading.Lock()
        self._derived: dict[SessionSettings, MemSIF] = {}
        self._example: tuple[NamespaceExport | None] | None = None  # (read,) once read

    @property
    def config(self) -> MemSIFConfig:
        """The served engine's configuration (its models need not be loaded)."""
        return self.served.config

    def engine(self) -> MemSIF:
        """The served engine, its models loaded on first use, when the Evaluate tab's copies a stopped
        process left are removed too.

        Raises:
            MemSIFError: the models cannot be loaded.
        """
        with self._lock:
            if not self._loaded:  # set only once loaded: ``models_loaded`` tells a loading engine apart
                self.served.load_models()
                remove_evaluation_copies(self.served)
                self._loaded = True
            return self.served

    def models_loaded(self) -> bool:
        """Whether the served engine has loaded its models (the first use after a start waits for them)."""
        return self._loaded

    def engine_for(self, settings: SessionSettings | None) -> MemSIF:
        """The engine with this session's settings: the served one, or a derived one over the same store.

        Raises:
            gr.Error: a setting out of range, or a model choice that is not "backend:model".
        """
        base = self.engine()
        if not settings:
            return base
        with self._lock:
            if settings not in self._derived:
                try:
                    self._derived[settings] = base.with_config(settings.over(base.config))
                except MemSIFError as exc:
                    raise gr.Error(escape_html(str(exc))) from exc
            return self._derived[settings]

    def session_engine(self, namespace: str | None, settings: SessionSettings | None = None) -> MemSIF | None:
        """The engine with this session's settings when the session holds a memory, else None (the
        views then show nothing)."""
        if not namespace:
            return None
        eng = self.engine_for(settings)
        return eng if eng.has_memory(namespace) else None

    def loading_engine(self, settings: SessionSettings | None) -> Iterator[tuple[str, Any]]:
        """``engine_for(settings)``, saying so while the models load: yields ("status", text) every half
        second until they are loaded (only on the first use after the server starts), then ("done", engine).

        Raises:
            gr.Error: the models cannot be loaded, or a bad model setting.
        """
        if self.models_loaded():
            yield "done", self.engine_for(settings)
            return
        cfg = self.config.model

        def describe(_state: JobProgress, seconds: float) -> str:
            return (f"⏳ Loading the models (embedder `{cfg.embedder_model}`, entity recogniser, LLM "
                    f"`{cfg.llm_model}`){self.load_pace()}… {seconds:.0f} s")

        yield "status", describe(JobProgress(), 0.0)
        try:
            yield from in_background(lambda _report: self.engine_for(settings), lambda *_a, **_k: None, describe)
        except MemSIFError as exc:
            raise refusal(f"The models could not be loaded: {escape_html(str(exc))}") from exc

    def load_pace(self) -> str:
        """How long loading the models took where it was measured: the prebuilt example's build (its
        provenance; ``PaceBook.model_load_s``), or "" when nothing was measured."""
        if self.pace.model_load_s is None:
            return ""
        return (f": they loaded in {self.pace.model_load_s:.0f} s when the example was built (a first start after "
                "an install also assembles the model from its packages, once)")

    def example(self) -> NamespaceExport | None:
        """The prebuilt example memory (an export with its provenance), read once; None when the file is
        absent or unreadable (the example is then built live)."""
        with self._lock:
            if self._example is None:
                self._example = (self._read_example(),)
            return self._example[0]

    def _read_example(self) -> NamespaceExport | None:
        if not self.example_memory_path.exists():
            return None
        try:
            return read_export(self.example_memory_path)
        except MemSIFError as exc:
            log.warning("the prebuilt example memory is not used: %s", exc)
            return None

    def model_choices(self) -> list[str]:
        """"backend:model" entries the Settings tab offers: the configured model, the packaged models, and
        ``extra_models``."""
        cfg = self.config.model
        packaged = [f"auto:{model_id}" for model_id in PACKAGED_MODELS]
        return list(dict.fromkeys([f"{cfg.llm_backend}:{cfg.llm_model}", *packaged, *self.extra_models]))

    def settings_in_force(self, settings: SessionSettings | None) -> str:
        """One sentence naming every session setting that differs from the app's defaults ("" when none):
        the build summary and the chat trace carry it, so a changed setting never acts unnoticed."""
        if not settings:
            return ""
        base = self.config
        changed = [f"{label} {getattr(settings, key):g} (default {getattr(base, name):g})"
                   for key, (label, name) in SETTING_FIELDS.items()
                   if abs(float(getattr(settings, key)) - float(getattr(base, name))) > 1e-9]
        default = f"{base.model.llm_backend}:{base.model.llm_model}"
        if settings.model and settings.model != default:
            changed.append(f"model {code_span(settings.model)} (default {code_span(default)})")
        return ("⚙️ Settings in force that differ from the defaults: " + ", ".join(changed) +
                " (Settings tab; “Reset to defaults” restores them).") if changed else ""

    def delete_memory(self, namespace: str, reason: str = "this session's memory was deleted") -> None:
        """Delete a session's memory and the Evaluate tab's copy of it. Its jobs still running or waiting
        for the model (a CoreFact extraction, an evaluation) stop first with ``reason`` (``locks.cancel``),
        so none writes into the memory that replaces it. (Every session's engine shares the served one's
        store and namespace locks.)"""
        both = (namespace, eval_namespace(namespace))
        for ns in both:
            cancel(ns, reason)
        for ns in both:
            self.served.delete_namespace(ns)

    def forget_session(self, namespace: str | None) -> None:
        """Delete a closed browser session's memory (``MEMSIF_APP_FORGET_SESSIONS=1``)."""
        if namespace:
            self.delete_memory(namespace)
