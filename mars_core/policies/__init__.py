"""Forgetting policies behind one interface, selectable by name.

Examples:
    >>> from mars_core.policies import make_policy
    >>> make_policy("fifo").name
    'fifo'
"""

from mars_core.policies.base import Policy, available, make_policy, register
from mars_core.policies.base import (
    available as available_policies,
)
from mars_core.policies.dmf import DMFPolicy, DMFPolicyConfig
from mars_core.policies.hybrid import HybridConfig, HybridPolicy
from mars_core.policies.learned import LearnedPolicy
from mars_core.policies.meta import MetaConfig, MetaController
from mars_core.policies.plan import (
    MAX_DEPTH,
    Candidate,
    Eviction,
    EvictStage,
    Plan,
    PolicyView,
    Stage,
    SummariseStage,
    Summary,
)
from mars_core.policies.priority import PriorityDecayConfig, PriorityDecayPolicy
from mars_core.policies.random_drop import RandomDropPolicy
from mars_core.policies.reflection import ReflectionConfig, ReflectionSummaryPolicy
from mars_core.policies.temporal import FIFOPolicy, LRUPolicy

__all__ = [
    "MAX_DEPTH",
    "Candidate",
    "DMFPolicy",
    "DMFPolicyConfig",
    "EvictStage",
    "Eviction",
    "FIFOPolicy",
    "HybridConfig",
    "HybridPolicy",
    "LRUPolicy",
    "LearnedPolicy",
    "MetaConfig",
    "MetaController",
    "Plan",
    "Policy",
    "PolicyView",
    "PriorityDecayConfig",
    "PriorityDecayPolicy",
    "RandomDropPolicy",
    "ReflectionConfig",
    "ReflectionSummaryPolicy",
    "Stage",
    "SummariseStage",
    "Summary",
    "available",
    "available_policies",
    "make_policy",
    "register",
]
