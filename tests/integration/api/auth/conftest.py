"""The auth tests' fixtures: a client of the real app, the RSA key the JWKS serves (one per package:
generating it is the slow part), and the JWKS server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client
from tests.support.jwt_tokens import (
    KID,
    _jwk,
    _JwksServer,
    _rsa_key,
)


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


@pytest.fixture(scope="package")
def signing_key() -> rsa.RSAPrivateKey:
    return _rsa_key()


@pytest.fixture
def jwks_server(signing_key: rsa.RSAPrivateKey) -> Iterator[_JwksServer]:
    with _JwksServer({"keys": [_jwk(signing_key, KID)]}) as server:
        yield server
