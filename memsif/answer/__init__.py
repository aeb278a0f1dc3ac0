"""Question answering over the memory (§3.5, Fig. 2 right): facts first, the sufficiency gate, tracing
back to Structured Interaction Memory for query-local evidence, the answer, and the post-answer
accumulation into ActiveFact clusters (§3.4).

- ``query``: the pipeline (``QueryPipeline``) and its trace (``Answer``);
- ``gate``: the sufficiency gate, whether the facts alone answer (``SufficiencyGate``);
- ``retrieval``: the facts and the evidence sentences for one question (``EvidenceRetriever``);
- ``context``: the answer's context from them, within its token budget;
- ``accumulation``: the evidence an answer used, added to the ActiveFact clusters (§3.4, Eqs. 2–4);
- ``relevance``: whether anything retrieved is about the question (the "nothing in memory" rule);
- ``places``: a country or US state the messages name by one of its cities (GeoNames);
- ``check``: the answer check, the unsupported-mention flag and the question's premise;
- ``when``: a "When" answer given the period its context resolves instead of a bare date;
- ``language``: which languages a question and the embedder are in.
"""
