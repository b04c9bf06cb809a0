"""Fixtures for the deployment checks (helpers live in deploy_helpers.py)."""

from __future__ import annotations

import pytest

from deploy_helpers import CHART, FULL_VALUES, documents, render


@pytest.fixture(scope="session")
def default_docs() -> list[dict]:
    return documents(render(CHART))


@pytest.fixture(scope="session")
def full_docs() -> list[dict]:
    return documents(render(CHART, FULL_VALUES))
