"""What the store holds of a namespace in memory, below the engine that keeps it current.

* :mod:`~mars_core.views.namespace` — :class:`~mars_core.views.namespace.NamespaceState`,
  one namespace's views (its active memories, their edges, the budget ledger, the known
  facts), and :class:`~mars_core.views.namespace.NamespaceView`, the read-only
  :class:`~mars_core.policies.plan.PolicyView` a policy plans over;
* :mod:`~mars_core.views.history` — where the views read what they do not hold;
* :mod:`~mars_core.views.timeline` — the active memories' temporal index;
* :mod:`~mars_core.views.protected` — the namespace's sensitive facts, for the output check.

The engine (:mod:`mars_core.engine`) loads these views, stages changes into them and
hands them to the policies; retrieval, assembly and explanations read them. Nothing here
imports the engine or the store (``tests/test_layering.py``).

Examples:
    >>> from mars_core.views import NamespaceState
    >>> NamespaceState.of("maya").count()
    0
"""

from mars_core.views.namespace import NamespaceState, NamespaceView, PolicyIO

__all__ = ["NamespaceState", "NamespaceView", "PolicyIO"]
