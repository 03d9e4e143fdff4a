"""Hypothesis strategies for random index fields and neutral filters (``mars_core.index``).

The same strategies as ``tests/filter_strategies.py``, over the filter nodes of
:mod:`mars_core.index.base` (the vector indexes' filter language).
"""

from __future__ import annotations

import uuid

import numpy as np
from hypothesis import strategies as st

from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Or,
    Range,
    VectorIndex,
    matches,
)
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow

__all__ = ["assert_filters_agree", "filter_strategies"]


def filter_strategies(
    keys: tuple[str, ...], scalars: st.SearchStrategy[MetaValue],
    bound: st.SearchStrategy[float | None], *, max_in: int, max_leaves: int,
) -> tuple[st.SearchStrategy[dict[str, MetaValue]], st.SearchStrategy[Filter]]:
    """Field dicts over ``keys`` and filters nesting And/Or/Not over Eq/In/Range leaves."""
    fields = st.dictionaries(st.sampled_from(keys), scalars, max_size=4)
    leaves = st.one_of(
        st.builds(Eq, st.sampled_from(keys), scalars),
        st.builds(In, st.sampled_from(keys), st.lists(scalars, max_size=max_in).map(tuple)),
        st.builds(Range, st.sampled_from(keys), bound, bound, bound, bound),
    )
    filters: st.SearchStrategy[Filter] = st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(And, st.lists(inner, max_size=3).map(tuple)),
            st.builds(Or, st.lists(inner, max_size=3).map(tuple)),
            st.builds(Not, inner),
        ),
        max_leaves=max_leaves,
    )
    return fields, filters


def assert_filters_agree(index: VectorIndex, flts: list[Filter],
                         metas: list[dict[str, MetaValue]]) -> None:
    """Entries with the fields ``metas``; every filter of ``flts`` finds exactly the
    entries :func:`~mars_core.index.base.matches` admits (the index's translation agrees
    with the neutral semantics)."""
    index.bind("props:v1", 2, lambda ns: [])
    ids = [str(uuid.UUID(int=i + 1)) for i in range(len(metas))]
    index.upsert([IndexRow(ids[i], "p", MemoryStatus.ACTIVE,
                           np.array([1.0, float(i)], dtype=np.float32), m)
                  for i, m in enumerate(metas)], new=True)
    probe = np.array([1.0, 0.0], dtype=np.float32)
    for flt in flts:
        expected = {ids[i] for i, m in enumerate(metas) if matches(flt, m)}
        hits = index.query("p", MemoryStatus.ACTIVE, probe, k=len(metas), where=flt)
        assert {i for i, _ in hits} == expected, flt
