"""Word lists the FiFA world is generated from (frozen with ``FIFA_VERSION``).

Domains are disjoint, so a validator can tell which attribute a phrase states.

Example:
    >>> len(NAMES) >= 30 and len(set(NAMES)) == len(NAMES)
    True
"""

from __future__ import annotations

__all__ = [
    "ARC_STATES",
    "ARC_TITLES",
    "ATTRIBUTES",
    "CLAUSES",
    "CONDITIONS",
    "NAMES",
    "PROPOSALS",
    "RELATIONS",
    "STIMULI",
    "SYLLABLES",
    "TOPICS",
]

NAMES: tuple[str, ...] = (
    "Maya", "Tomas", "Ines", "Bruno", "Lena", "Omar", "Priya", "Kenji", "Sofia", "Dara",
    "Felix", "Nadia", "Rui", "Hana", "Viktor", "Zola", "Emil", "Ayla", "Joao", "Mirela",
    "Tariq", "Greta", "Luca", "Yara", "Anders", "Noor", "Pavel", "Ilse", "Kofi", "Rosa",
)

ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "favourite drink": ("matcha", "espresso", "oat latte", "kombucha", "rooibos", "lemonade"),
    "home city": ("Lisbon", "Porto", "Tallinn", "Ghent", "Valencia", "Bergen"),
    "hobby": ("bouldering", "pottery", "chess", "sailing", "birdwatching", "baking"),
    "pet": ("a grey parrot", "a beagle", "two cats", "a tortoise", "a ferret", "goldfish"),
    "music": ("fado", "jazz", "techno", "bluegrass", "opera", "k-pop"),
}

RELATIONS: tuple[str, str] = ("close friends", "drifted apart")

ARC_TITLES: dict[str, tuple[str, ...]] = {
    "social_gathering": ("harbour festival", "book club", "wedding surprise"),
    "project_collaboration": ("grant proposal", "server migration", "product launch"),
    "learning_session": ("photosynthesis unit", "tax law module", "glacier course"),
    "crisis_management": ("flood response", "power outage", "supply shortage"),
    "personal_reflection": ("career change", "fitness plan", "family reunion"),
}

ARC_STATES: tuple[str, ...] = (
    "the old mill", "the river pier", "stage amber", "stage cobalt", "level orange",
    "level crimson", "the east wing", "the west annex", "phase lantern", "phase meadow",
    "sector nine", "sector twelve", "the glass pavilion", "the stone barn", "gate vermilion",
    "gate saffron", "route alder", "route birch", "mode quartz", "mode basalt",
    "the rooftop garden", "the night market", "plan heron", "plan osprey",
    "status tangerine", "status indigo", "the lower quay", "the upper terrace",
    "track juniper", "track willow", "wave hollow", "wave summit",
)

TOPICS: tuple[str, ...] = (
    "weekend trip", "office plants", "charity run", "recipe swap", "film night",
    "garden plot", "choir rehearsal", "bike repair", "language exchange", "quiz team",
    "museum visit", "street fair", "board games", "kayak outing", "photo walk",
)

PROPOSALS: tuple[str, ...] = (
    "renting a minibus", "a rota on a whiteboard", "matching orange shirts",
    "a shared spreadsheet", "a projector from the library", "raised beds by the fence",
    "an extra warm-up slot", "a toolkit in the shed", "pairing beginners with mentors",
    "a trivia night fundraiser", "a guided audio tour", "a lemonade stand",
    "a tournament ladder", "dry bags for phones", "a sunrise start",
)

CONDITIONS: tuple[str, ...] = (
    "type 2 diabetes", "chronic migraines", "an anxiety disorder", "early arthritis",
    "a heart arrhythmia", "severe asthma",
)

STIMULI: tuple[str, ...] = (
    "the north entrance sensor reported a fault", "the weather service issued a wind warning",
    "the canteen ran out of soup", "the shuttle bus was delayed", "a fire drill was announced",
    "the wifi in the hall dropped", "a delivery arrived at the loading bay",
    "the lift on floor three stopped", "a news alert mentioned road closures",
)

CLAUSES: dict[str, tuple[str, ...]] = {
    "Social": ("and everyone around laughed about it", "which sparked a long chat with the group"),
    "Analytical": ("which I logged with the exact time and the source",
                   "and I cross-checked it against my earlier notes"),
    "Creative": ("which gave me an idea for a sketch", "and it reminded me of an old story"),
    "Practical": ("so I updated my checklist", "which I will act on later"),
    "Empathetic": ("and I could tell it mattered to them", "and they seemed relieved to share it"),
}

SYLLABLES: tuple[str, ...] = (
    "ka", "lo", "mi", "ru", "ven", "tor", "sa", "qui", "bel", "dro", "nex", "pa", "zu", "fin",
)
