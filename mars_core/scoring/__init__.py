"""Scoring functions of the forgetting policies: pure, deterministic, configurable.

Every name in the submodules' ``__all__`` is re-exported here: DMF survival score and
decay (:mod:`~mars_core.scoring.dmf`), MaRS density (:mod:`~mars_core.scoring.density`),
OSL-MR Mixed-Score and freshness (:mod:`~mars_core.scoring.mixed`), OSL-MR's reward and
behaviour-cloning teacher (:mod:`~mars_core.scoring.reward`), Oblivion retention and
seed 003 relevance/TTL (:mod:`~mars_core.scoring.retention`), and the policies' cached
working set with bounded, incremental novelty (:mod:`~mars_core.scoring.working_set`).

Examples:
    >>> from mars_core.scoring import DMFConfig, half_life
    >>> round(half_life(0.5, DMFConfig()), 2)
    26.41
"""

from mars_core.scoring import density, dmf, mixed, retention, reward, working_set
from mars_core.scoring.density import *  # noqa: F403 - the submodule's __all__
from mars_core.scoring.dmf import *  # noqa: F403
from mars_core.scoring.mixed import *  # noqa: F403
from mars_core.scoring.retention import *  # noqa: F403
from mars_core.scoring.reward import *  # noqa: F403
from mars_core.scoring.working_set import *  # noqa: F403

__all__ = [*dmf.__all__, *density.__all__, *mixed.__all__, *retention.__all__,  # noqa: PLE0604
           *reward.__all__, *working_set.__all__]
