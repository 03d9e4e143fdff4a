"""Forgetting policies behind one interface, selectable by name.

Example:
    >>> from mars_core.policies import make_policy
    >>> make_policy("fifo").name
    'fifo'
"""

from mars_core.policies.base import (
    Candidate,
    Eviction,
    Policy,
    PolicyView,
    available,
    make_policy,
    register,
)
from mars_core.policies.base import (
    available as available_policies,
)
from mars_core.policies.temporal import FIFOPolicy, LRUPolicy

__all__ = [
    "Candidate",
    "Eviction",
    "FIFOPolicy",
    "LRUPolicy",
    "Policy",
    "PolicyView",
    "available",
    "available_policies",
    "make_policy",
    "register",
]
