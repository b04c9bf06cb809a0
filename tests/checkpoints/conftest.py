"""Fixtures: real-layout checkpoint folders (built once per session, sparse), a fake Hub on
127.0.0.1 serving them, and an HF cache in the standard layout filled from it."""

from __future__ import annotations

import os
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


def fill_cache(hub: FakeHub, repo_id: str, cache_dir: str) -> None:
    """The repo in the HF cache, standard layout: its JSON files downloaded from the fake Hub
    with the real client; its safetensors blobs placed sparse under the etag the Hub gives
    (downloading them would write every zero of the data region)."""
    from huggingface_hub import hf_hub_download

    repo = hub.repos[repo_id]
    for name in repo.files:
        if name.endswith(".json"):
            hf_hub_download(repo_id, name, cache_dir=cache_dir, endpoint=hub.url)
    folder = pathlib.Path(cache_dir) / ("models--" + repo_id.replace("/", "--"))
    for name in repo.files:
        if name.endswith(".safetensors"):
            blob = folder / "blobs" / repo.etag(name)
            copy_sparse(repo.folder / name, blob)
            link = folder / "snapshots" / repo.commit / name
            link.symlink_to(os.path.relpath(blob, link.parent))


def copy_sparse(src: pathlib.Path, dst: pathlib.Path) -> None:
    with open(src, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        f.seek(0)
        head = f.read(8 + n)
    with open(dst, "wb") as f:
        f.write(head)
        f.truncate(os.path.getsize(src))
