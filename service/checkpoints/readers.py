"""The three places a checkpoint's files are read from, behind one small interface
(`json(name)` -> the parsed file or None when the checkpoint has none; `header(name)` -> its
tensors): a local directory (also a snapshot folder of the HF cache) and the Hub through
`huggingface_hub` (ranged reads of the safetensors headers; small JSON files downloaded into
the HF cache as the client always does). Caps and timeouts come from the ReadPolicy."""

from __future__ import annotations

import json
import os
from typing import Any

from mambasizer.service.checkpoints.inventory import (
    HeaderError,
    Tensor,
    parse_header,
    read_local_header,
)
from mambasizer.service.checkpoints.policy import ReadPolicy


class ReadError(Exception):
    """A file that exists but cannot be used (too large, not JSON, unreadable, outside the root)."""


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class DirectoryReader:
    """Files of a local checkpoint folder. With `root`, every file (symlinks followed) must
    stay under it: a config.json linked to /etc/... is refused, not read."""

    def __init__(self, folder: str, policy: ReadPolicy, root: str | None = None):
        self.folder = folder
        self.policy = policy
        self.root = root

    def _path(self, name: str) -> str | None:
        path = os.path.join(self.folder, name)
        if not os.path.lexists(path):
            return None
        real = os.path.realpath(path)
        if self.root is not None and not _under(real, self.root):
            raise ReadError(f"{name} resolves outside the model root {self.root} (a symlink or '..'); it is not read")
        if not os.path.isfile(real):
            raise ReadError(f"{name} is not a regular file")
        return real

    def json(self, name: str) -> Any:
        path = self._path(name)
        if path is None:
            return None
        size = os.path.getsize(path)
        if size > self.policy.max_json_bytes:
            raise ReadError(f"{name} is {size:,} bytes, over the {self.policy.max_json_bytes:,}-byte limit for a config file")
        return _loads(name, open(path, "rb").read())

    def exists(self, name: str) -> bool:
        return self._path(name) is not None

    def header(self, name: str) -> list[Tensor]:
        path = self._path(name)
        if path is None:
            raise ReadError(f"{name} is named by the safetensors index but missing")
        try:
            return read_local_header(path, name, self.policy.max_header_bytes)
        except HeaderError as exc:
            raise ReadError(str(exc)) from None


def _loads(name: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReadError(f"{name} is not valid JSON ({exc})") from None


class HubError(Exception):
    """The Hub did not give a file: `status` is the HTTP status (0: no answer in time / no
    connection), the message says which file and what to do."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


class HubReader:
    """A repo on the Hub (or the mirror HF_ENDPOINT names), read through huggingface_hub.
    The first file pins the commit (X-Repo-Commit), so every later read is of that commit."""

    def __init__(self, repo_id: str, revision: str | None, *, endpoint: str, token: str | None,
                 cache_dir: str, policy: ReadPolicy):
        self.repo_id = repo_id
        self.revision = revision or "main"
        self.endpoint = endpoint
        self.token = token
        self.cache_dir = cache_dir
        self.policy = policy
        self.commit: str | None = None

    def _meta(self, name: str):
        """The file's HEAD (size, commit), or None when the repo has no such file."""
        from huggingface_hub import get_hf_file_metadata, hf_hub_url
        from huggingface_hub.errors import EntryNotFoundError

        url = hf_hub_url(self.repo_id, name, revision=self.commit or self.revision, endpoint=self.endpoint)
        try:
            meta = get_hf_file_metadata(url, token=self.token, timeout=self.policy.hub_timeout_s, endpoint=self.endpoint)
        except EntryNotFoundError:
            return None
        except Exception as exc:
            raise _hub_error(exc, self.repo_id, name, self.policy.hub_timeout_s, self.token) from None
        if self.commit is None and meta.commit_hash:
            self.commit = meta.commit_hash
        return meta

    def exists(self, name: str) -> bool:
        return self._meta(name) is not None

    def json(self, name: str) -> Any:
        from huggingface_hub import hf_hub_download

        meta = self._meta(name)
        if meta is None:
            return None
        if meta.size is not None and meta.size > self.policy.max_json_bytes:
            raise ReadError(f"{name} is {meta.size:,} bytes, over the {self.policy.max_json_bytes:,}-byte limit for a config file")
        try:
            path = hf_hub_download(self.repo_id, name, revision=self.commit or self.revision, cache_dir=self.cache_dir,
                                   endpoint=self.endpoint, token=self.token, etag_timeout=self.policy.hub_timeout_s)
        except Exception as exc:
            raise _hub_error(exc, self.repo_id, name, self.policy.hub_timeout_s, self.token) from None
        return _loads(name, open(path, "rb").read(self.policy.max_json_bytes + 1))

    def header(self, name: str) -> list[Tensor]:
        from huggingface_hub import HfApi

        api = HfApi(endpoint=self.endpoint, token=self.token)
        try:
            meta = api.parse_safetensors_file_metadata(self.repo_id, name, revision=self.commit or self.revision,
                                                       timeout=self.policy.hub_timeout_s)
        except Exception as exc:
            raise _hub_error(exc, self.repo_id, name, self.policy.hub_timeout_s, self.token) from None
        header = {k: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}
                  for k, t in meta.tensors.items()}
        return parse_header(header, name)


def scrub(text: str, token: str | None) -> str:
    """`text` with the token (if any) masked: a message never carries it."""
    return text.replace(token, "***") if token else text


def _hub_error(exc: Exception, repo_id: str, name: str, timeout: float, token: str | None) -> HubError:
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    # huggingface_hub's HTTP client (httpx, or its httpx2 fork) raises its own classes: read by name.
    bases = {c.__name__ for c in type(exc).__mro__}

    where = f"{repo_id}/{name}"
    if isinstance(exc, OfflineModeIsEnabled):
        return HubError(f"{where}: the Hub is off in this process (HF_HUB_OFFLINE)")
    if "TimeoutException" in bases or isinstance(exc, TimeoutError):
        return HubError(f"{where}: the Hub did not answer within {timeout:g} s")
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        status = exc.response.status_code
        if status in (401, 403):
            return HubError(f"{where}: the Hub refused access (HTTP {status}): the repo is gated or private, or the token is "
                            "wrong; set HF_TOKEN to a token that may read it", status)
        if status == 404:
            return HubError(f"{where}: no such repo or revision on the Hub (HTTP 404)", status)
        return HubError(f"{where}: the Hub answered HTTP {status}; try again later", status)
    if "TransportError" in bases or isinstance(exc, ConnectionError):
        return HubError(f"{where}: the Hub could not be reached ({type(exc).__name__})")
    return HubError(scrub(f"{where}: {type(exc).__name__}: {exc}"[:400], token))
