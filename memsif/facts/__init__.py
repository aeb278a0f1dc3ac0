"""Dual-Track Fact Memory (§3.3–3.4).

The CoreFact track (§3.3): ``core.py`` — schema-guided extraction over batches of unread messages,
constrained decoding, and Add / Update / Merge / Supersede, every operation logged; the checks a
candidate passes before it is stored: ``grounding.py`` and ``values.py`` (the grounding gate),
``claims.py`` (who said it), ``dates.py`` (relative dates resolved against the message's own date),
``verify.py`` (the model's yes/no verification); ``step.py`` (the CoreFact step of an ingest, each batch
written as it is done); ``corrections.py`` (a person's edits, deletions and restorations, kept as
operations of the same log).
The ActiveFact track (§3.4): ``active.py`` — candidate clusters C_k, Score_src and Score_qry (Eqs. 2–3)
and promotion (Eq. 4), as pure functions over the records. The fact types are ``records.FactType``.
"""
