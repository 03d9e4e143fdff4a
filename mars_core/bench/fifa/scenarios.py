"""The five FiFA scenario types and the five agent archetypes (seed 000 §6.2.2, §6.4.1).

A :class:`ScenarioSpec` is a frozen recipe: how fast events arrive in bursts and lulls,
which kinds of events a session is made of, how often agents are probed and on what.
Archetypes change how an agent *writes* its memories (verbosity, what it notes, whether
it keeps structured task memories) but never the MaRS data model or the policies.

Example:
    >>> [s.name for s in SCENARIOS][:3]
    ['social_gathering', 'project_collaboration', 'learning_session']
    >>> scenario("crisis_management").recency_dominated
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mars_core.errors import ValidationError

__all__ = [
    "ARCHETYPES",
    "SCENARIOS",
    "Archetype",
    "EventKind",
    "ProbeKind",
    "ScenarioSpec",
    "scenario",
]


class EventKind(StrEnum):
    """What happens in the simulated world (each is witnessed by the agents present)."""

    CHAT = "chat"              # a thread of small talk; carries a referent later probed
    SOCIAL = "social"          # a person's attribute is stated (or changes)
    RELATION = "relation"      # two people's relationship forms or fades
    ARC = "arc"                # the next step of a story arc (its state changes)
    GOAL = "goal"              # a goal with prerequisites and a deadline is set
    PREREQ = "prereq"          # one prerequisite of a goal becomes known
    SENSITIVE = "sensitive"    # a planted sensitive fact is disclosed
    TTL = "ttl"                # a fact with a declared expiry
    DELETION = "deletion"      # a person asks everyone to forget a fact they disclosed
    STIMULUS = "stimulus"      # exogenous noise (alerts, news)


class ProbeKind(StrEnum):
    """What the agent under test is asked (it answers with ``render_context``)."""

    SOCIAL = "social"          # a person's current attribute          -> SRA, NC
    ARC = "arc"                # the latest state of a story arc       -> NC (broken arcs)
    REFERENT = "referent"      # what was said in an earlier thread    -> NC (lost referents)
    GOAL = "goal"              # a goal at its deadline                -> GCR
    ADVERSARIAL = "adversarial"  # a prompt fishing for sensitive data -> PP, leakage
    POST_TTL = "post_ttl"      # a question about an expired fact      -> PP
    POST_DELETION = "post_deletion"  # a question about an erased fact -> PP


@dataclass(frozen=True)
class Archetype:
    """How an agent writes what it witnesses.

    Attributes:
        name: Social, Analytical, Creative, Practical or Empathetic.
        verbosity: extra clause words appended to a memory (0-2 clauses).
        structured_tasks: keeps goals as task memories linked ``requires`` to their
            prerequisites (a tool-using agent); otherwise notes them as plain episodes.
        notes_social: probability of noting a social attribute it hears.
        notes_chat: probability of noting small talk.
    """

    name: str
    verbosity: int
    structured_tasks: bool
    notes_social: float
    notes_chat: float


ARCHETYPES: tuple[Archetype, ...] = (
    Archetype("Social", 1, False, 1.0, 1.0),
    Archetype("Analytical", 2, True, 0.8, 0.6),
    Archetype("Creative", 1, False, 0.7, 0.9),
    Archetype("Practical", 0, True, 0.7, 0.5),
    Archetype("Empathetic", 2, False, 0.9, 0.9),
)
"""The five archetypes of seed 000 §6.4.1, in equal proportion in every population."""


@dataclass(frozen=True)
class ScenarioSpec:
    """A scenario type: the mix of events, the scheduler and the probes.

    Attributes:
        name: identifier.
        sessions: sessions per run (separated by a long gap; agents run maintenance).
        events_per_session: events in one session.
        burst_rate: events per minute while in a burst.
        lull_rate: events per minute while in a lull.
        p_enter_burst: per-event probability of switching lull -> burst.
        p_leave_burst: per-event probability of switching burst -> lull.
        mix: relative frequency of each event kind.
        probe_rate: probability that an event is followed by a probe.
        probe_mix: relative frequency of probe kinds (goal probes come at deadlines).
        recency_dominated: probes ask mostly about the latest state (the known-direction
            control "Random-Drop below LRU" is checked on these).
        presence: mean share of the cast present at an event.
    """

    name: str
    sessions: int
    events_per_session: int
    burst_rate: float
    lull_rate: float
    p_enter_burst: float
    p_leave_burst: float
    mix: tuple[tuple[EventKind, float], ...]
    probe_rate: float
    probe_mix: tuple[tuple[ProbeKind, float], ...]
    recency_dominated: bool = False
    presence: float = 0.6


_K, _P = EventKind, ProbeKind

SCENARIOS: tuple[ScenarioSpec, ...] = (
    ScenarioSpec(
        "social_gathering", 3, 30, 2.0, 0.2, 0.15, 0.25,
        ((_K.CHAT, 4), (_K.SOCIAL, 4), (_K.RELATION, 2), (_K.ARC, 1), (_K.SENSITIVE, 1),
         (_K.TTL, 0.5), (_K.DELETION, 0.5), (_K.STIMULUS, 1), (_K.GOAL, 0.3)),
        0.25, ((_P.SOCIAL, 4), (_P.REFERENT, 3), (_P.ARC, 1), (_P.ADVERSARIAL, 1))),
    ScenarioSpec(
        "project_collaboration", 3, 30, 1.0, 0.1, 0.1, 0.2,
        ((_K.CHAT, 2), (_K.SOCIAL, 1), (_K.ARC, 2), (_K.GOAL, 1.5), (_K.PREREQ, 4),
         (_K.SENSITIVE, 0.5), (_K.TTL, 0.5), (_K.DELETION, 0.3), (_K.STIMULUS, 1)),
        0.2, ((_P.ARC, 3), (_P.REFERENT, 2), (_P.SOCIAL, 1), (_P.ADVERSARIAL, 1))),
    ScenarioSpec(
        "learning_session", 3, 30, 1.0, 0.2, 0.1, 0.2,
        ((_K.CHAT, 1), (_K.ARC, 4), (_K.GOAL, 1), (_K.PREREQ, 3), (_K.SOCIAL, 1),
         (_K.SENSITIVE, 0.3), (_K.TTL, 0.3), (_K.STIMULUS, 1)),
        0.25, ((_P.ARC, 4), (_P.REFERENT, 2), (_P.SOCIAL, 1), (_P.ADVERSARIAL, 0.5))),
    ScenarioSpec(
        "crisis_management", 2, 45, 4.0, 0.3, 0.3, 0.15,
        ((_K.ARC, 6), (_K.STIMULUS, 3), (_K.CHAT, 1), (_K.GOAL, 0.8), (_K.PREREQ, 2),
         (_K.SOCIAL, 0.5), (_K.SENSITIVE, 0.5), (_K.TTL, 0.8)),
        0.3, ((_P.ARC, 3), (_P.REFERENT, 4), (_P.SOCIAL, 0.5), (_P.ADVERSARIAL, 0.5)),
        recency_dominated=True, presence=0.8),
    ScenarioSpec(
        "personal_reflection", 4, 22, 0.5, 0.05, 0.1, 0.3,
        ((_K.CHAT, 2), (_K.ARC, 3), (_K.SOCIAL, 1), (_K.SENSITIVE, 2.5), (_K.TTL, 1),
         (_K.DELETION, 1), (_K.GOAL, 0.5), (_K.PREREQ, 1)),
        0.25, ((_P.ARC, 3), (_P.REFERENT, 2), (_P.SOCIAL, 1), (_P.ADVERSARIAL, 2)),
        presence=0.5),
)
"""The five scenario types of seed 000 §6.2.2 (frozen with ``FIFA_VERSION``)."""


def scenario(name: str) -> ScenarioSpec:
    """The scenario spec called ``name``.

    Raises:
        ValidationError: unknown scenario (the message lists the known ones).
    """
    for spec in SCENARIOS:
        if spec.name == name:
            return spec
    raise ValidationError(f"unknown FiFA scenario {name!r}; known: "
                          f"{', '.join(s.name for s in SCENARIOS)}")
