"""Dual-Track Fact Memory (§3.3–3.4): CoreFact consolidation and query-driven ActiveFact formation."""
