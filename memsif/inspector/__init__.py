"""The MemSIF inspector (Gradio): chat with long-term memory and see how it is built.

One module per tab — ``build`` (upload, φ timeline, Topical Segments; §3.2), ``chat`` (answers with
their trace, messages in context; §3.5), ``trajectories`` (Event Trajectories; §3.2), ``corefacts``
(CoreFacts and their operation log; §3.3), ``activefacts`` (candidate clusters against θ_s/θ_q;
§3.4), ``search`` (facts and messages by meaning), ``evaluate`` (retrieval against flat baselines on a
file's own questions; §4), ``settings`` (α, τ_split, τ_merge, Top-K, θ; Table 13) — each a
``common.Tab``: a class of handlers bound to one ``common.Inspector`` (the engine it is handed and what
the page derives from it) that lays out its typed ``Views`` and wires its own events. No tab imports
another; ``demo.py`` lists the tabs, lays the page out (``common.Page``) and wires the events that cross
tabs (:func:`memsif.inspector.demo.build_demo`; the page's ``demo.inspector`` and ``demo.page``).
``place.py`` shows a message in its Topical Segment, Event Trajectory and timeline; ``tools.py``
holds the agent (MCP) tools; ``pace.py`` the stated waits. The inspector imports the engine's public
names only (``memsif.__all__``, and ``memsif.eval.__all__`` for the Evaluate tab). No module of this
package holds state. ``app.py`` at the top of the repository makes the engine from the environment and runs it.
"""

from memsif.inspector.demo import PAGE_CSS, PAGE_I18N, build_demo

__all__ = ["PAGE_CSS", "PAGE_I18N", "build_demo"]
