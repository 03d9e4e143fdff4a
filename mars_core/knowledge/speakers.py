"""Who said a turn, and when: what a framework's message carries, as ``observe``'s
``speaker`` and ``at``.

The store resolves "I" in a turn to its speaker ("I like jazz" said by Caroline is a fact
about Caroline) and dates a turn by ``at``; a framework message carries both in its own
way (LangChain ``message.name``, LlamaIndex ``ChatMessage.additional_kwargs``). The
adapters share this one rule:

* the speaker is the message's own name when it has one, else the name configured for
  its role (``user_name``/``assistant_name``), else none (the role stands for it);
* the time is the message's ``timestamp`` (a ``datetime``, naive ones UTC, or an
  ISO 8601 string) when it has one, else the store's clock.

Examples:
    >>> names = Speakers(user_name="Caroline")
    >>> turn_meta("user", None, "2023-05-08T13:56:00", names)
    {'speaker': 'Caroline', 'at': datetime.datetime(2023, 5, 8, 13, 56)}
    >>> turn_meta("assistant", "Melanie", None, names)
    {'speaker': 'Melanie', 'at': None}
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mars_core.engine.args import label, stored_moment
from mars_core.errors import ValidationError

__all__ = ["TIMESTAMP_KEY", "Speakers", "message_time", "turn_meta"]

TIMESTAMP_KEY = "timestamp"
"""The key of a message's metadata (``additional_kwargs``) that holds when it was said."""


@dataclass(frozen=True)
class Speakers:
    """The names given to the two sides of a conversation.

    Args:
        user_name: who the ``user`` turns are (None: the role stands for them).
        assistant_name: who the ``assistant`` turns are (None: likewise).

    Raises:
        ValidationError: a name that is not a non-empty string.

    Examples:
        >>> Speakers(user_name="Ana").speaker("user", None)
        'Ana'
    """

    user_name: str | None = None
    assistant_name: str | None = None

    def __post_init__(self) -> None:
        for what, value in (("user_name", self.user_name),
                            ("assistant_name", self.assistant_name)):
            if value is not None:
                label(value, what)

    def speaker(self, role: str, name: object) -> str | None:
        """The message's own ``name``, else the configured name of ``role``."""
        if name is not None and name != "":
            return label(name, "message name")
        return {"user": self.user_name, "assistant": self.assistant_name}.get(role)


def message_time(value: object) -> datetime | None:
    """A message's ``timestamp``: a datetime or an ISO 8601 string (None: none).

    Raises:
        ValidationError: anything else, or a date no stored memory may keep.
    """
    if isinstance(value, str):
        text = value
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(f"a message {TIMESTAMP_KEY} must be ISO 8601, "
                                  f"not {text[:40]!r}") from None
    return stored_moment(value, f"message {TIMESTAMP_KEY}")


def turn_meta(role: str, name: object, stamp: object, speakers: Speakers) -> dict[str, Any]:
    """``observe``'s ``speaker`` and ``at`` for one message (see the module)."""
    return {"speaker": speakers.speaker(role, name), "at": message_time(stamp)}
