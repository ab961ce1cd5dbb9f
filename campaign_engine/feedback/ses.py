"""Amazon SES bounce and complaint notifications (the JSON inside an SNS ``Message``) read into ``Feedback``.

Both SES shapes are read: identity notifications (``notificationType``) and configuration-set event
publishing (``eventType``). ``Permanent`` bounces are hard; ``Transient`` and ``Undetermined`` only
count. A complaint whose feedback type is ``not-spam`` is the opposite of a complaint and is ignored.
The record identity is SES's ``feedbackId``, so the same feedback published to two topics applies once;
the SNS ``MessageId`` stands in when it is missing. SES's own ``mail.messageId`` and our ``Message-ID``
header (``mail.commonHeaders.messageId``, present when headers are included) both link it to a send.
"""

from __future__ import annotations

import json
from typing import Any

from campaign_engine.feedback.events import (
    Action,
    AddressEvent,
    Feedback,
    MalformedFeedback,
    message_id_forms,
)

__all__ = ["parse_ses"]


def _recipients(section: dict[str, Any], field: str) -> list[str]:
    rows = section.get(field)
    if not isinstance(rows, list) or not rows:
        raise MalformedFeedback(f"SES notification without {field}")
    addresses = [row.get("emailAddress") for row in rows if isinstance(row, dict)]
    if not addresses or not all(isinstance(a, str) and a.strip() for a in addresses):
        raise MalformedFeedback(f"SES notification with an unreadable {field}")
    return addresses  # type: ignore[return-value]  # checked just above


def _message_ids(notification: dict[str, Any]) -> tuple[str, ...]:
    mail = notification.get("mail")
    if not isinstance(mail, dict):
        return ()
    headers = mail.get("commonHeaders")
    candidates = [mail.get("messageId"), headers.get("messageId") if isinstance(headers, dict) else None]
    return message_id_forms(candidates)


def parse_ses(message: str, *, sns_message_id: str) -> Feedback | None:
    """The feedback in one SES notification, or ``None`` for messages that change nothing (deliveries,
    sends, opens, SES's set-up test message, ...)."""
    try:
        notification = json.loads(message)
    except json.JSONDecodeError:
        return None  # e.g. SES's "Successfully validated SNS topic ..." when a destination is set up
    if not isinstance(notification, dict):
        return None
    kind = notification.get("notificationType") or notification.get("eventType")
    if kind == "Bounce":
        section = notification.get("bounce")
        if not isinstance(section, dict):
            raise MalformedFeedback("SES Bounce without bounce")
        bounce_type = str(section.get("bounceType") or "Undetermined")
        action: Action = "hard_bounce" if bounce_type == "Permanent" else "soft_bounce"
        detail = f"{bounce_type}/{section.get('bounceSubType') or 'General'}"
        addresses = _recipients(section, "bouncedRecipients")
    elif kind == "Complaint":
        section = notification.get("complaint")
        if not isinstance(section, dict):
            raise MalformedFeedback("SES Complaint without complaint")
        feedback_type = section.get("complaintFeedbackType")
        if feedback_type == "not-spam":
            return None
        action = "complaint"
        detail = f"Complaint/{feedback_type or 'unspecified'}"
        addresses = _recipients(section, "complainedRecipients")
    else:
        return None
    feedback_id = section.get("feedbackId")
    key = f"ses:{feedback_id}" if isinstance(feedback_id, str) and feedback_id else f"sns:{sns_message_id}"
    events = tuple(AddressEvent(address=a, action=action, detail=detail) for a in addresses)
    return Feedback(key, "ses", events, _message_ids(notification))
