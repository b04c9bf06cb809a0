"""Fixtures: real-layout checkpoint folders (built once per session, sparse), a fake Hub on
127.0.0.1 serving them, and an HF cache in the standard layout filled from it."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import ckpt_fixtures as F
from fake_hub import FakeHub
from mambasizer.service.checkpoints import CACHE


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("models")
    return {s: F.write_checkpoint(root / f"qwen3.8-27b-{s}", s) for s in F.SCHEMES}


@pytest.fixture()
def hub(checkpoints, monkeypatch):
    server = FakeHub().start()
    for scheme, folder in checkpoints.items():
        server.add(F.REPO_IDS[scheme], folder)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Each test its own HF cache (empty) and a cold resolution cache."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    CACHE.clear()
    yield
    CACHE.clear()
