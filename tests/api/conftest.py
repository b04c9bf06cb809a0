"""Fixtures for the HTTP API tests: the real app, over HTTP (Starlette's TestClient,
httpx underneath), with its lifespan running."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from mambasizer.service.api.app import create_app


@pytest.fixture()
def app():
    return create_app()


@pytest.fixture()
def client(app):
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c
