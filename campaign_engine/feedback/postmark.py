"""Postmark webhook records (``Bounce``, ``SpamComplaint``, ``SubscriptionChange``) read into ``Feedback``,
and the endpoint's basic-auth check.

Record shapes are Postmark's documented webhook payloads; only the fields the rules need are read and
every other record type is ``None`` (acknowledged, ignored). Bounce types follow Postmark's bounce-type
table: the address is dead for ``HARD_TYPES`` or whenever Postmark itself deactivated it
(``Inactive: true``); ``SOFT_TYPES`` are temporary and only count; the rest (auto-responders, blocks of
our content, challenge mails, ...) say nothing about the address.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

from campaign_engine.feedback.events import (
    Action,
    AddressEvent,
    Feedback,
    MalformedFeedback,
    SuppressionReason,
    message_id_forms,
)

__all__ = ["HARD_TYPES", "SOFT_TYPES", "basic_auth_matches", "parse_postmark"]

HARD_TYPES = frozenset({"HardBounce", "BadEmailAddress", "ManuallyDeactivated"})
SOFT_TYPES = frozenset({"SoftBounce", "Transient", "DnsError"})
# SubscriptionChange.SuppressionReason -> ours. A recipient's own unsubscribe through Postmark is
# "ManualSuppression" with Origin "Recipient"; we suppress the address either way.
_SUBSCRIPTION_REASONS: dict[str, SuppressionReason] = {
    "HardBounce": "hard_bounce",
    "SpamComplaint": "spam_complaint",
    "ManualSuppression": "manual",
}


def basic_auth_matches(header: str | None, *, username: str, password: str) -> bool:
    """``Authorization: Basic ...`` against the configured pair, compared in constant time (both parts
    are always compared, so timing reveals neither which part nor how much of it matched)."""
    if not header or header[:6].lower() != "basic ":
        return False
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    given_user, sep, given_password = decoded.partition(b":")
    user_ok = hmac.compare_digest(given_user, username.encode())
    password_ok = hmac.compare_digest(given_password, password.encode())
    return bool(sep) and user_ok and password_ok


def _text(record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        raise MalformedFeedback(f"{record.get('RecordType')} record without {field}")
    return value


def _message_ids(record: dict[str, Any]) -> tuple[str, ...]:
    return message_id_forms([record.get("MessageID")])


def _record_id(record: dict[str, Any]) -> str:
    value = record.get("ID")
    if isinstance(value, bool) or not isinstance(value, int | str) or str(value) == "":
        raise MalformedFeedback(f"{record.get('RecordType')} record without ID")
    return str(value)


def parse_postmark(record: Any) -> Feedback | None:
    """The feedback in one webhook record, or ``None`` for records that change nothing."""
    if not isinstance(record, dict):
        raise MalformedFeedback("a Postmark webhook body is a JSON object")
    kind = record.get("RecordType")
    if kind == "Bounce":
        bounce_type = record.get("Type")
        detail = bounce_type if isinstance(bounce_type, str) else "unknown"
        action: Action
        if record.get("Inactive") is True or detail in HARD_TYPES:
            action = "hard_bounce"
        elif detail in SOFT_TYPES:
            action = "soft_bounce"
        else:
            return None
        event = AddressEvent(address=_text(record, "Email"), action=action, detail=detail)
        return Feedback(f"postmark:bounce:{_record_id(record)}", "postmark", (event,), _message_ids(record))
    if kind == "SpamComplaint":
        event = AddressEvent(address=_text(record, "Email"), action="complaint", detail="SpamComplaint")
        return Feedback(
            f"postmark:complaint:{_record_id(record)}", "postmark", (event,), _message_ids(record)
        )
    if kind == "SubscriptionChange":
        return _subscription_change(record)
    return None


def _subscription_change(record: dict[str, Any]) -> Feedback:
    recipient = _text(record, "Recipient")
    suppress = record.get("SuppressSending")
    if not isinstance(suppress, bool):
        raise MalformedFeedback("SubscriptionChange record without SuppressSending")
    changed_at = record.get("ChangedAt")
    reason_text = record.get("SuppressionReason")
    reason = _SUBSCRIPTION_REASONS.get(reason_text, "manual") if isinstance(reason_text, str) else "manual"
    detail = f"SubscriptionChange/{reason_text if isinstance(reason_text, str) else 'unknown'}"
    # With a bounce or complaint reason it has the effect of that record, for accounts that send only
    # SubscriptionChange webhooks; a duplicate of the Bounce/SpamComplaint record changes nothing more.
    if not suppress:
        event = AddressEvent(address=recipient, action="reactivate", detail=detail)
    elif reason == "spam_complaint":
        event = AddressEvent(address=recipient, action="complaint", detail=detail)
    elif reason == "hard_bounce":
        event = AddressEvent(address=recipient, action="hard_bounce", detail=detail)
    else:
        event = AddressEvent(address=recipient, action="suppress", detail=detail, reason=reason)
    # These records carry no ID: the change itself is the identity. Hashed, so the key that outlives
    # the suppression holds no address.
    identity = f"{recipient.strip().lower()}|{changed_at}|{suppress}|{record.get('MessageStream')}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:40]
    return Feedback(f"postmark:subscription-change:{digest}", "postmark", (event,), _message_ids(record))
