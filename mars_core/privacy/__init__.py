"""Privacy mechanisms of mars-memory (seed 000 §3.3.3, §4.3, §5.4).

Examples:
    >>> from mars_core.privacy import DPConfig
    >>> DPConfig().enabled
    False
"""

from mars_core.privacy.dp import (
    ANYONE,
    DPConfig,
    MarginalBand,
    PrivacyAccountant,
    ScoredCandidate,
    TieBreakResult,
    delta_q,
    exponential_mechanism,
    group_sizes,
    marginal_band,
    mechanism_probabilities,
    near_threshold_tiebreak,
    utility_bound,
)

__all__ = [
    "ANYONE",
    "DPConfig",
    "MarginalBand",
    "PrivacyAccountant",
    "ScoredCandidate",
    "TieBreakResult",
    "delta_q",
    "exponential_mechanism",
    "group_sizes",
    "marginal_band",
    "mechanism_probabilities",
    "near_threshold_tiebreak",
    "utility_bound",
]

# other privacy modules are re-exported below

# -- sensitivity, detectors, the semantic signal and redaction (seed 000 §4.3, §5.4)
from mars_core.privacy.detectors import (
    CATEGORY_KINDS,
    DEFAULT_WEIGHTS,
    ENTITY_KINDS,
    IDENTIFIER_KINDS,
    PATTERN_KINDS,
    Detection,
    Kind,
    detect,
)
from mars_core.privacy.output import FlaggedText, RephraseOrConfirm
from mars_core.privacy.redaction import (
    DEFAULT_MASK,
    DEFAULT_REDACT_KINDS,
    RedactionResult,
    find_protected,
    redact,
    sensitive_phrases,
)
from mars_core.privacy.semantic import SemanticSensitivity, SemanticVerdict, semantic_for
from mars_core.privacy.sensitivity import (
    EntityPreferences,
    PreferencesLike,
    SensitivityConfig,
    SensitivityPreferences,
    SensitivityReport,
    SensitivityScorer,
)

__all__ += [
    "CATEGORY_KINDS",
    "DEFAULT_MASK",
    "DEFAULT_REDACT_KINDS",
    "DEFAULT_WEIGHTS",
    "ENTITY_KINDS",
    "IDENTIFIER_KINDS",
    "PATTERN_KINDS",
    "Detection",
    "EntityPreferences",
    "FlaggedText",
    "Kind",
    "PreferencesLike",
    "RedactionResult",
    "RephraseOrConfirm",
    "SemanticSensitivity",
    "SemanticVerdict",
    "SensitivityConfig",
    "SensitivityPreferences",
    "SensitivityReport",
    "SensitivityScorer",
    "detect",
    "find_protected",
    "redact",
    "semantic_for",
    "sensitive_phrases",
]
