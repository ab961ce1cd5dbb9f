"""SmtpProvider against a real aiosmtpd server on loopback, scripted per recipient and per stage: STARTTLS
required, used, or off, credentials and certificates, and addresses kept out of logs and reasons."""

from __future__ import annotations

import logging
import ssl

import pytest

from campaign_engine.delivery.email.provider import ProviderConfigError
from tests.support.smtp_relay import (
    SmtpServer,
    outcomes,
    outgoing,
    provider_for,
)

# --- TLS ------------------------------------------------------------------------------------------------


def test_starttls_required_but_not_offered_is_a_config_error(smtp_server: SmtpServer) -> None:
    provider = provider_for(smtp_server, starttls="require")
    with pytest.raises(ProviderConfigError, match="STARTTLS"):
        provider.verify()
    # send_batch never raises (the port contract): nothing was sent, so every message is throttled.
    [result] = provider.send_batch([outgoing(1)])
    assert (result.outcome, result.reason) == ("throttled", "connect:ProviderConfigError")
    assert smtp_server.handler.received == []


def test_starttls_is_used_when_offered_and_login_happens_over_tls(tls_smtp_server: SmtpServer) -> None:
    provider = provider_for(tls_smtp_server, username="mailer", password="s3cret")
    provider.verify()
    results = provider.send_batch([outgoing(1)])
    assert outcomes(results) == [("p1", "accepted", None)]
    assert tls_smtp_server.handler.received[0].tls


def test_starttls_off_sends_in_clear(tls_smtp_server: SmtpServer) -> None:
    results = provider_for(tls_smtp_server, starttls="off").send_batch([outgoing(1)])
    assert results[0].outcome == "accepted"
    assert not tls_smtp_server.handler.received[0].tls


def test_bad_credentials_are_a_config_error(tls_smtp_server: SmtpServer) -> None:
    with pytest.raises(ProviderConfigError, match="credentials"):
        provider_for(tls_smtp_server, username="mailer", password="wrong").verify()


def test_untrusted_certificate_is_not_accepted(tls_smtp_server: SmtpServer) -> None:
    provider = provider_for(tls_smtp_server, ssl_context=ssl.create_default_context())
    results = provider.send_batch([outgoing(1)])
    assert results[0].outcome == "throttled"  # nothing sent: the TLS handshake failed first
    assert tls_smtp_server.handler.received == []


def test_addresses_never_reach_logs_or_reasons(
    smtp_server: SmtpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    smtp_server.handler.rcpt_replies = {"gone@rcpt.test": "550 5.1.1 No such user gone@rcpt.test"}
    results = provider_for(smtp_server).send_batch([outgoing(1, to="gone@rcpt.test"), outgoing(2)])
    smtp_server.handler.drop_after_data = True
    results += provider_for(smtp_server).send_batch([outgoing(3)])
    ours = [r for r in caplog.records if r.name.startswith("campaign_engine")]
    assert ours  # the connection loss was logged
    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in ours) + " ".join(str(r) for r in results)
    assert "@rcpt.test" not in logged
