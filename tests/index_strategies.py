"""Hypothesis strategies for random index fields and neutral filters (``mars_core.index``).

The same strategies as ``tests/filter_strategies.py``, over the filter nodes of
:mod:`mars_core.index.base` (the vector indexes' filter language).
"""

from __future__ import annotations

from hypothesis import strategies as st

from mars_core.index.base import And, Eq, Filter, In, MetaValue, Not, Or, Range

__all__ = ["filter_strategies"]


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
