"""The emulated deployment's configuration and client for tests/e2e/test_lambda_emulation.py: a value for
each SSM parameter serverless.yml reads, the settings a test run must change, and tRPC over the
emulated API Gateway."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet

from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET
from tests.support.delivery import WEBHOOK_SECRET, ThreadServer
from tests.support.email import UNSUBSCRIBE_SECRET
from tests.support.lambda_emulator import LambdaEmulator
from tests.support.postmark_standin import PostmarkStandin

__all__ = ["EMAIL_FROM", "STAGE", "Trpc", "overrides", "ssm_values"]

STAGE = "test"
EMAIL_FROM = "news@campaigns.test"


def ssm_values(settings: Settings, inbox: ThreadServer, postmark: PostmarkStandin) -> dict[str, str]:
    """A test value for every SSM parameter serverless.yml reads (the emulator refuses a missing one)."""
    values = {
        "neo4j-uri": settings.neo4j_uri,  # the session's test Neo4j
        "neo4j-user": settings.neo4j_user,
        "neo4j-password": settings.neo4j_password.get_secret_value(),
        "auth-jwt-secret": TEST_JWT_SECRET,  # tokens minted below with the same secret
        "admin-profile-ids": ADMIN_ID,
        "notifications-webhook-url": f"{inbox.url}/api/notifications/send",  # the reference inbox
        "notifications-webhook-secret": WEBHOOK_SECRET,  # the inbox verifies signatures with it
        "unsubscribe-secret": UNSUBSCRIBE_SECRET,
        "secrets-key": Fernet.generate_key().decode(),  # seals receivers' own webhook secrets
        "domain-name": "campaigns.test",
        "postmark-api-key": postmark.token,  # the stand-in checks the server token
        "postmark-broadcast-stream": "broadcast",  # a Broadcasts stream on the stand-in
        "email-from": EMAIL_FROM,
        "app-origins": '{"default": "https://app.example"}',  # the campaign's tenant is the default one
        "postmark-webhook-username": "postmark-feedback",  # the bounce webhook below authenticates with it
        "postmark-webhook-password": "lambda-emulation-webhook-password",
    }
    return {f"/campaign-engine/{STAGE}/{name}": value for name, value in values.items()}


def overrides(moto: str, postmark: PostmarkStandin) -> dict[str, str]:
    """Where the test's environment must differ from production's, and why."""
    return {
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",  # the reference inbox listens on loopback
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",  # waves back to back instead of a minute apart
        # moto's SQS scans the whole queue on every receive: waves of 100 (not 1000) keep the delivery
        # queue shallow enough for the test's minute; the walk then crosses a dozen page cursors.
        "CAMPAIGN_DISPATCH_PAGE_SIZE": "100",
        "AWS_ENDPOINT_URL_SQS": moto,  # the queue URLs are moto's; the SDK must call it too
        "POSTMARK_API_URL": postmark.url,  # the stand-in instead of api.postmarkapp.com
    }


@dataclass
class Trpc:
    """tRPC over the emulated API Gateway: every call is one invocation of the ``api`` function."""

    aws: LambdaEmulator
    token: str
    calls: int = 0

    def _data(self, path: str, answer: Any) -> Any:
        self.calls += 1
        assert answer.status == 200, f"{path}: {answer.status} {answer.body[:500]!r} {self.aws.errors[-1:]}"
        return answer.json()["result"]["data"]

    def query(self, path: str, data: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"}
        answer = self.aws.http("GET", f"/trpc/{path}", query={"input": json.dumps(data)}, headers=headers)
        return self._data(path, answer)

    def mutate(self, path: str, data: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        return self._data(
            path, self.aws.http("POST", f"/trpc/{path}", headers=headers, body=json.dumps(data))
        )
