"""The Recognizer (seed 002 §2.3): which buffer items did the answer use?

Credit assignment is deterministic: an item counts as **used** when the answer contains
enough of the item's *distinctive* content words — those not already in the query, so
echoing the question credits nothing. With ``d`` such words (at most ``max_words``, the
longest first), the item is used when at least ``min_words`` of them, or a share
``min_overlap`` of them, occur in the answer — or when the item holds a share
``min_overlap`` of the answer's own new words (a short answer such as "a nurse"). The result goes to
``store.credit(used, offered)`` (the policies' observable reward) and to the Memory
Manager (reinforcement of used memories only — "this conservative policy ties
reinforcement strictly to usage").

Examples:
    >>> from mars_core.control.memory import BufferItem, Layer
    >>> items = [BufferItem("a", "Ana moved to Lisbon in May", Layer.L2, 6, 1.0),
    ...          BufferItem("b", "Bo plays the cello", Layer.L2, 4, 1.0)]
    >>> Recognizer().used("Where did Ana move?", "She moved to Lisbon in May.", items)
    ['a']
"""

from __future__ import annotations

from collections.abc import Sequence

from mars_core.control.config import RecognizerConfig
from mars_core.control.memory import BufferItem
from mars_core.control.text import FILLER_WORDS, content_words

__all__ = ["Recognizer"]


class Recognizer:
    """Lexical credit assignment of an answer to the buffer items offered to it.

    Args:
        config: overlap thresholds.
    """

    def __init__(self, config: RecognizerConfig | None = None) -> None:
        self.config = config or RecognizerConfig()

    def used(self, query: str, answer: str, items: Sequence[BufferItem]) -> list[str]:
        """Ids of the items the answer used, in buffer order."""
        said = content_words(answer) - FILLER_WORDS
        asked = content_words(query)
        new = said - asked
        out = []
        for item in items:
            have = content_words(item.text) - asked
            words = sorted(have, key=lambda w: (-len(w), w))[: self.config.max_words]
            if not words:
                continue
            hit = sum(1 for w in words if w in said)
            if hit >= self.config.min_words or hit / len(words) >= self.config.min_overlap \
                    or (new and len(new & have) / len(new) >= self.config.min_overlap):
                out.append(item.id)
        return out
