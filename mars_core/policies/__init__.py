"""Forgetting policies behind one interface, selectable by name.

Example:
    >>> from mars_core.policies import make_policy
    >>> make_policy("fifo").name
    'fifo'
"""

from mars_core.policies.base import (
    MAX_DEPTH,
    Candidate,
    Eviction,
    EvictStage,
    Plan,
    Policy,
    PolicyView,
    Stage,
    SummariseStage,
    Summary,
    available,
    make_policy,
    register,
)
from mars_core.policies.base import (
    available as available_policies,
)
from mars_core.policies.temporal import FIFOPolicy, LRUPolicy

__all__ = [
    "MAX_DEPTH",
    "Candidate",
    "EvictStage",
    "Eviction",
    "FIFOPolicy",
    "LRUPolicy",
    "Plan",
    "Policy",
    "PolicyView",
    "Stage",
    "SummariseStage",
    "Summary",
    "available",
    "available_policies",
    "make_policy",
    "register",
]
