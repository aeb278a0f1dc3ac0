"""The MemSIF inspector (Gradio): chat with long-term memory and see how it is built.

One module per tab — ``build`` (upload, φ timeline, Topical Segments; §3.2), ``chat`` (answers with
their trace, messages in context; §3.5), ``trajectories`` (Event Trajectories; §3.2), ``corefacts``
(CoreFacts and their operation log; §3.3), ``activefacts`` (candidate clusters against θ_s/θ_q;
§3.4), ``evaluate`` (retrieval against flat baselines on a file's own questions), ``settings`` —
each a class of handlers bound to one ``common.Inspector`` (the engine it is handed and what the page
derives from it), assembled by :func:`memsif.inspector.demo.build_demo` (``build_demo(engine)``; the
page's ``demo.inspector``). No module of this package holds state. ``app.py`` at the top of the
repository makes the engine from the environment and runs it.
"""

from memsif.inspector.demo import PAGE_CSS, build_demo

__all__ = ["PAGE_CSS", "build_demo"]
