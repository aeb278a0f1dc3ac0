"""MemSIF inspector (Gradio): chat with long-term memory and see how it is built.

Run: ``python app.py`` (offline, packaged default models; http://127.0.0.1:7860). Tabs: Build (upload
or bundled example → φ timeline and Topical Segments), Chat (answers with their trace and their
messages in context; turns can be written into memory), Trajectories, CoreFacts (with the operation
log), ActiveFacts (clusters against θ_s/θ_q), Evaluate (a file's own questions, retrieval against
flat baselines), Settings (α, τ_split, τ_merge, Top-K, θ_s, θ_q, model; rebuild). The tabs live in
``memsif/inspector/``.

Each browser session gets its own memory namespace, made on the server; every view is a named API
endpoint (``gradio_client``: ``/build``, ``/build_facts``, ``/ask``, ``/message``, ``/timeline``,
``/trajectories``, ``/trajectory``, ``/facts``, ``/clusters``, ``/evaluate``, ``/settings`` then
``/rebuild``, ``/samples``, ``/forget``). With ``MEMSIF_APP_MCP=1`` (or ``--mcp``) the same
endpoints are MCP tools at ``/gradio_api/mcp/``.

Environment: ``GRADIO_SERVER_NAME`` (default 127.0.0.1), ``MEMSIF_APP_FORGET_SESSIONS=1`` (delete a
session's memory when its tab closes; for public Spaces), ``MEMSIF_APP_MODELS`` (more models for
Settings), and every ``MEMSIF_*`` setting of the engine.
"""

from __future__ import annotations

import os
import sys

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.inspector import PAGE_CSS, PAGE_I18N, build_demo
from memsif.inspector.build import MAX_UPLOAD_BYTES


def forget_sessions(env: dict[str, str] | None = None) -> bool:
    """Whether a session's memory is deleted when its browser tab closes: ``MEMSIF_APP_FORGET_SESSIONS``
    ("1" or "0"); by default on when the app runs on a Hugging Face Space (``SPACE_ID`` is set: a public
    page, where visitors' memories should not pile up), off elsewhere."""
    env = os.environ if env is None else env
    default = "1" if env.get("SPACE_ID") else "0"
    return env.get("MEMSIF_APP_FORGET_SESSIONS", default).strip() == "1"


def extra_models(env: dict[str, str] | None = None) -> list[str]:
    """More "backend:model" choices for the Settings tab: ``MEMSIF_APP_MODELS``, comma-separated (e.g.
    ``transformers:Qwen/Qwen3-4B,openai:qwen3``)."""
    env = os.environ if env is None else env
    return [m.strip() for m in env.get("MEMSIF_APP_MODELS", "").split(",") if m.strip()]


def main(argv: list[str] | None = None) -> None:
    """Read the configuration (the environment, ``--mcp``) once, make the engine (its models load on
    the first visit), build the page over it and serve it."""
    args = sys.argv[1:] if argv is None else argv
    mcp = "--mcp" in args or os.environ.get("MEMSIF_APP_MCP", "0") == "1"
    engine = MemSIF(MemSIFConfig.from_env())
    demo = build_demo(engine, mcp=mcp, forget_sessions=forget_sessions(), extra_models=extra_models())
    demo.queue(default_concurrency_limit=4).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), show_error=True,
        max_file_size=MAX_UPLOAD_BYTES, mcp_server=mcp, css=PAGE_CSS, i18n=PAGE_I18N)


if __name__ == "__main__":
    main()
