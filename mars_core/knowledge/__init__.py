"""Knowledge: what the store learns from what it is told.

Facts extracted from turns (:mod:`.extract`), the OSL-MR evidence learner (:mod:`.learn`),
the signals of a memory (:mod:`.enrich`), summaries (:mod:`.summarise`) and who said a turn
and when (:mod:`.speakers`).
"""
