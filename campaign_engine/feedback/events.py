"""What a provider told us about an address, in our own terms (no I/O).

A suppression belongs to the email *address*, not to a profile: every profile using the address stops
receiving email. Addresses are compared in one normal form, the whole address lowercased: mailbox
providers treat local parts case-insensitively in practice, providers report addresses in their own
case, and mailing a complainer because of a capital letter is worse than a case-variant suppression.
``graph/rules/policy.py`` applies the same form (Cypher ``toLower``) to the stored contact value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SUPPRESSION_REASONS",
    "Action",
    "AddressEvent",
    "Feedback",
    "MalformedFeedback",
    "SuppressionReason",
    "message_id_forms",
    "normalize_address",
]

SuppressionReason = Literal["hard_bounce", "soft_bounce", "spam_complaint", "manual"]
SUPPRESSION_REASONS: tuple[SuppressionReason, ...] = (
    "hard_bounce",
    "soft_bounce",
    "spam_complaint",
    "manual",
)

# hard_bounce / complaint / suppress: suppress now (complaint also opts the profiles out);
# soft_bounce: count, suppress past the limit within the window; reactivate: lift the suppression.
Action = Literal["hard_bounce", "soft_bounce", "complaint", "suppress", "reactivate"]


class MalformedFeedback(ValueError):
    """A record of a type we handle lacks a field the rules need (the message never quotes the body)."""


def normalize_address(address: str) -> str:
    """The one normal form of an address (see the module docstring)."""
    return address.strip().lower()


def message_id_forms(values: object) -> tuple[str, ...]:
    """Each message id (strings among ``values``) with and without its angle brackets, first seen
    first: the SMTP provider stores the ``Message-ID`` header as written (``<id@domain>``), a webhook may
    name it either way, and a send is found by the exact stored value."""
    forms: dict[str, None] = {}
    for value in values if isinstance(values, list | tuple) else ():
        bare = value.strip().removeprefix("<").removesuffix(">").strip() if isinstance(value, str) else ""
        if bare:
            forms.update({value.strip(): None, bare: None, f"<{bare}>": None})
    return tuple(forms)


@dataclass(frozen=True)
class AddressEvent:
    address: str  # as the provider reported it; ``normalized`` is the suppression key
    action: Action
    detail: str  # the provider's own classification, e.g. "HardBounce" or "Permanent/General"
    reason: SuppressionReason = "manual"  # only for ``suppress``

    @property
    def normalized(self) -> str:
        return normalize_address(self.address)


@dataclass(frozen=True)
class Feedback:
    """One provider record. ``key`` is its identity at the provider, so a retried webhook applies once;
    ``message_ids`` link it to the message we sent (``CAMPAIGN_STATE.emailProviderMessageId``)."""

    key: str
    source: Literal["postmark", "ses"]
    events: tuple[AddressEvent, ...]
    message_ids: tuple[str, ...] = ()
