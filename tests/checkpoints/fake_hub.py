"""A local stand-in for the Hugging Face Hub's file endpoints, as huggingface_hub 2.4.0 calls
them (read from its source: file_download.get_hf_file_metadata / hf_hub_download,
hf_api.parse_safetensors_file_metadata, hf_api.model_info):

* HEAD / GET `/{repo}/resolve/{revision}/{file}`: `X-Repo-Commit`, `ETag`, `Content-Length`;
  GET honours `Range: bytes=a-b` (206), which is how the client reads a safetensors header;
  a missing file is 404 with `X-Error-Code: EntryNotFound`, a missing repo 404 `RepoNotFound`,
  a missing revision 404 `RevisionNotFound`.
* GET `/api/models/{repo}/revision/{revision}`: the repo's metadata (`sha`, `siblings`).

It serves fixture folders (JSON files as bytes, safetensors files as their header followed by
zeros up to the real size: the data region is never materialised). Failure modes for the
tests: `status` (every answer that code), `delay_s` (answer that late), `token` (required
bearer token, else 401)."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class Repo:
    def __init__(self, folder: pathlib.Path, commit: str = COMMIT):
        self.folder = folder
        self.commit = commit
        self.files = sorted(p.name for p in folder.iterdir())

    def size(self, name: str) -> int:
        return os.path.getsize(self.folder / name)

    def etag(self, name: str) -> str:
        if name.endswith(".safetensors"):  # an LFS file's etag is its sha256; a stand-in of that form
            return hashlib.sha256(f"{self.commit}/{name}/{self.size(name)}".encode()).hexdigest()
        return hashlib.sha1((self.folder / name).read_bytes()).hexdigest()

    def read(self, name: str, start: int, end: int) -> bytes:
        """Bytes [start, end] of the file: past what is on disk (a sparse hole), zeros."""
        with open(self.folder / name, "rb") as f:
            f.seek(start)
            data = f.read(end - start + 1)
        return data + b"\0" * (end - start + 1 - len(data))


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.status: int | None = None
        self.delay_s = 0.0
        self.token: str | None = None
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range)
        self.auth_seen: list[str | None] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                hub._answer(self, head=True)

            def do_GET(self) -> None:
                hub._answer(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeHub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add(self, repo_id: str, folder: pathlib.Path) -> Repo:
        self.repos[repo_id] = Repo(folder)
        return self.repos[repo_id]

    def _send(self, h: BaseHTTPRequestHandler, code: int, headers: dict, body: bytes, head: bool) -> None:
        h.send_response(code)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)) if "Content-Length" not in headers else headers["Content-Length"])
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _error(self, h, code: int, error_code: str | None, head: bool, commit: str | None = None) -> None:
        headers = {"Content-Type": "application/json"}
        if error_code:
            headers["X-Error-Code"] = error_code
        if commit:
            headers["X-Repo-Commit"] = commit
        self._send(h, code, headers, json.dumps({"error": error_code or "error"}).encode(), head)

    def _answer(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        path = unquote(h.path.split("?", 1)[0])
        self.requests.append(("HEAD" if head else "GET", path, h.headers.get("Range")))
        self.auth_seen.append(h.headers.get("Authorization"))
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.status is not None:
            return self._error(h, self.status, None, head)
        if self.token is not None and h.headers.get("Authorization") != f"Bearer {self.token}":
            return self._error(h, 401, "RepoNotFound", head)
        m = re.fullmatch(r"/api/models/(.+?)/revision/([^/]+)", path)
        if m:
            repo = self.repos.get(m.group(1))
            if repo is None:
                return self._error(h, 404, "RepoNotFound", head)
            body = json.dumps({"id": m.group(1), "sha": repo.commit,
                               "siblings": [{"rfilename": f} for f in repo.files]}).encode()
            return self._send(h, 200, {"Content-Type": "application/json"}, body, head)
        m = re.fullmatch(r"/(.+?)/resolve/([^/]+)/(.+)", path)
        if not m:
            return self._error(h, 404, None, head)
        repo = self.repos.get(m.group(1))
        if repo is None:
            return self._error(h, 404, "RepoNotFound", head)
        if m.group(2) not in ("main", repo.commit):
            return self._error(h, 404, "RevisionNotFound", head)
        name = m.group(3)
        if name not in repo.files:
            return self._error(h, 404, "EntryNotFound", head, repo.commit)
        size = repo.size(name)
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{repo.etag(name)}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        rng = h.headers.get("Range")
        if head:
            headers["Content-Length"] = str(size)
            return self._send(h, 200, headers, b"", True)
        if rng:
            rm = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            assert rm, rng
            start, end = int(rm.group(1)), min(int(rm.group(2) or size - 1), size - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
            return self._send(h, 206, headers, repo.read(name, start, end), False)
        return self._send(h, 200, headers, repo.read(name, 0, size - 1), False)


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
