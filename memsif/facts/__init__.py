"""Dual-Track Fact Memory (§3.3–3.4).

``core.py``: schema-guided CoreFacts — batches of unread messages, constrained extraction, the grounding
gate (``grounding.py``, ``values.py``) and Add / Update / Merge / Supersede, every operation logged (§3.3).
``active.py``: query-driven ActiveFacts — candidate clusters C_k, Score_src and Score_qry (Eqs. 2–3) and
promotion (Eq. 4), as pure functions over the records (§3.4). The fact types are ``records.FactType``.
"""
