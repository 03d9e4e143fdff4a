"""Reading: what a question gets back.

The lexical analysis (:mod:`.analysis`), the question's frame (:mod:`.frame`), the hybrid
ranking and packing (:mod:`.retrieval`), a user's reranker (:mod:`.rerank`), the lineage and
support of what is shown (:mod:`.assemble`), the rendered context (:mod:`.context`) and the
explanation of a memory (:mod:`.explain`). Nothing here writes.
"""
