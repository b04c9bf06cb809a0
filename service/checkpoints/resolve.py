"""`--model-path` -> the checkpoint to size, found where SGLang 0.5.23 would find it.

SGLang (ModelConfig / transformers' AutoConfig / its weight loader) takes `--model-path` as a
local directory when one exists, else as a Hugging Face repo id, read through the HF cache
and the Hub (`HF_HOME` / `HF_HUB_CACHE`, `HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_OFFLINE`,
`--revision`). This module does the same, within the ReadPolicy in force, and reads only
what sizing needs: config.json, hf_quant_config.json, model.safetensors.index.json and the
safetensors headers. A shipped checkpoint (a preset's name or repo id) is the fast path and
needs no file at all. Everything is read here; the solver gets parsed values.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mambasizer.service.checkpoints.inventory import Inventory, Tensor
from mambasizer.service.checkpoints.policy import ReadPolicy, current_policy, offline
from mambasizer.service.checkpoints.readers import (
    DirectoryReader,
    HubError,
    HubReader,
    ReadError,
    scrub,
)
from mambasizer.service.solver.errors import PlanInputError

CONFIG = "config.json"
HF_QUANT_CONFIG = "hf_quant_config.json"
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
MAX_SHARDS = 4096  # far above any checkpoint (Kimi-K3 has 232); a bound on the reads one request makes
# A Hub-resolved checkpoint is kept this long (its branch may move); directories and cache
# snapshots are kept while their config.json is unchanged.
HUB_TTL_S = 300.0
CACHE_SIZE = 64
# A Hugging Face repo id: `name` or `org/name` (huggingface_hub's validate_repo_id's characters).
_REPO_ID = re.compile(r"^[\w.-]{1,96}(/[\w.-]{1,96})?$")


@dataclass(frozen=True)
class Checkpoint:
    """What was found for a model path, and what was read to find it."""

    model_path: str
    source: str  # "shipped" | "directory" | "hf-cache" | "hub"
    repo_id: str | None
    revision: str | None  # the commit when known, else the revision asked for
    files: tuple[str, ...]
    config: Mapping[str, Any] = field(repr=False)  # config.json, with hf_quant_config.json under "hf_quant_config"
    inventory: Inventory | None = field(default=None, repr=False)
    preset: str | None = None  # the shipped preset (source "shipped")

    def describe(self) -> dict:
        """What a plan says about where its model came from."""
        out: dict[str, Any] = {"model_path": self.model_path, "source": self.source, "repo_id": self.repo_id,
                               "revision": self.revision, "files_read": list(self.files)}
        if self.preset is not None:
            out["preset"] = self.preset
        if self.inventory is not None:
            out["inventory"] = self.inventory.summary()
        return out


class CheckpointError(PlanInputError):
    """A model path that cannot be resolved or read; the message names the path and the fix."""


# The three ways to give a checkpoint, said by every "not found".
def _ways(policy: ReadPolicy) -> str:
    if policy.owner == "serve":
        hub = "let the server read the Hub (start it with --hub or MAMBASIZER_HUB=1)"
        folder = "a directory holding its config.json under one of the server's model roots (--model-root / MAMBASIZER_MODEL_ROOTS)"
    else:
        hub = "its Hugging Face repo id with the Hub reachable (HF_HUB_OFFLINE unset, HF_ENDPOINT for a mirror, HF_TOKEN if gated)"
        folder = "a directory holding its config.json"
    return f"give {folder}; or {hub}; or paste its config.json as model.hf_config"


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def hub_cache_dir(env: Mapping[str, str]) -> str:
    """huggingface_hub's cache folder, read at call time: HF_HUB_CACHE, else HF_HOME/hub."""
    if env.get("HF_HUB_CACHE"):
        return os.path.expanduser(env["HF_HUB_CACHE"])
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def hub_token(env: Mapping[str, str]) -> str | None:
    return (env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or "").strip() or None


def hub_endpoint(env: Mapping[str, str]) -> str:
    return (env.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


class _Cache:
    """A bounded LRU of resolved checkpoints, shared by the threads of one process."""

    def __init__(self, size: int):
        self.size = size
        self.items: OrderedDict[tuple, tuple[float, Checkpoint]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple, ttl: float | None) -> Checkpoint | None:
        with self.lock:
            hit = self.items.get(key)
            if hit is None or (ttl is not None and time.monotonic() - hit[0] > ttl):
                return None
            self.items.move_to_end(key)
            return hit[1]

    def put(self, key: tuple, value: Checkpoint) -> None:
        with self.lock:
            self.items[key] = (time.monotonic(), value)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


CACHE = _Cache(CACHE_SIZE)


def _read(reader: Any, model_path: str, source: str, repo_id: str | None, revision: str | None, field_name: str) -> Checkpoint:
    """config.json, hf_quant_config.json, the safetensors index and every shard's header."""
    files: list[str] = []
    config = reader.json(CONFIG)
    if config is None:
        raise CheckpointError(field_name, f"{model_path!r} ({source}) has no config.json; give the checkpoint's folder "
                              "(the one holding config.json and the *.safetensors files)")
    if not isinstance(config, dict):
        raise CheckpointError(field_name, f"{model_path!r}: config.json is not a JSON object")
    files.append(CONFIG)
    config = dict(config)
    hfq = reader.json(HF_QUANT_CONFIG)
    if hfq is not None:
        if not isinstance(hfq, dict):
            raise CheckpointError(field_name, f"{model_path!r}: hf_quant_config.json is not a JSON object")
        files.append(HF_QUANT_CONFIG)
        # The solver's key for the sibling file (service/solver/checkpoint_quant.py).
        config["hf_quant_config"] = hfq
    index = reader.json(INDEX)
    shards: list[str]
    if index is not None:
        files.append(INDEX)
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict):
            raise CheckpointError(field_name, f"{model_path!r}: {INDEX} has no weight_map object")
        shards = sorted({str(v) for v in weight_map.values()})
        if len(shards) > MAX_SHARDS:
            raise CheckpointError(field_name, f"{model_path!r}: {INDEX} names {len(shards)} files, over the {MAX_SHARDS} read")
        if any(s.startswith("/") or ".." in s.split("/") for s in shards):
            raise CheckpointError(field_name, f"{model_path!r}: {INDEX} names a file outside the checkpoint; it is not read")
    elif reader.exists(SINGLE):
        shards = [SINGLE]
    else:
        shards = []
    tensors: list[Tensor] = []
    for shard in shards:
        tensors += reader.header(shard)
        files.append(shard + " (header)")
    inventory = Inventory(tuple(tensors), tuple(shards)) if shards else None
    return Checkpoint(model_path, source, repo_id, revision, tuple(files), config, inventory)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _allowed_root(model_path: str, policy: ReadPolicy) -> tuple[str | None, str | None]:
    """(the root the path lies under, or None when any directory may be read; why it may not)."""
    if policy.roots is None:
        return None, None
    if not policy.roots:
        return None, "this server reads no directories (no --model-root / MAMBASIZER_MODEL_ROOTS is configured)"
    lexical = os.path.normpath(os.path.abspath(os.path.expanduser(model_path)))
    real = os.path.realpath(lexical)
    for root in policy.roots:
        if _under(lexical, root) and _under(real, root):
            return root, None
    return None, (f"it is outside the server's model roots ({', '.join(policy.roots)}), '..' and symlinks resolved; "
                  "give a directory under one of them, or add its folder as a root (--model-root / MAMBASIZER_MODEL_ROOTS)")


def _looks_like_path(model_path: str) -> bool:
    return model_path.startswith(("/", ".", "~")) or os.sep + os.sep in model_path or model_path.count("/") > 1 \
        or model_path.endswith("/")


def resolve(model_path: str, revision: str | None = None, *, field_name: str = "sglang_args",
            policy: ReadPolicy | None = None, environ: Mapping[str, str] | None = None) -> Checkpoint:
    """The checkpoint `model_path` names: a shipped preset, a directory, a repo id in the HF
    cache, or a repo on the Hub, in SGLang's order and within the policy."""
    from mambasizer.service.presets import PRESETS, preset_name, repo_id

    policy = policy or current_policy()
    env = _environ(environ)
    label = f"--model-path {model_path[:200]!r}"
    path_like = _looks_like_path(model_path)
    # 1. A directory, as SGLang tries first (only under a root on the server; nothing
    # outside one is even looked at).
    root, refusal = _allowed_root(model_path, policy)
    if policy.roots is None or root is not None:
        folder = os.path.realpath(os.path.abspath(os.path.expanduser(model_path)))
        if os.path.isdir(folder):
            return _directory(model_path, folder, root, policy, field_name)
    if path_like:
        if refusal is not None:
            raise CheckpointError(field_name, f"{label}: not read: {refusal}")
        raise CheckpointError(field_name, f"{label}: no such directory; {_ways(policy)}")
    # 2. A shipped checkpoint: no file read.
    name = preset_name(model_path)
    if name is not None:
        p = PRESETS[name]
        return Checkpoint(model_path, "shipped", repo_id(p) or None, revision, (), p.hf_config, None, preset=name)
    if not _REPO_ID.match(model_path):
        raise CheckpointError(field_name, f"{label}: neither a directory nor a Hugging Face repo id (org/name); {_ways(policy)}")
    # 3. The HF cache, then 4. the Hub.
    tried: list[str] = []
    if policy.hf_cache:
        found = _from_cache(model_path, revision, env, policy, field_name)
        if found is not None:
            return found
        tried.append(f"not in the Hugging Face cache at {hub_cache_dir(env)}")
    else:
        tried.append("this server reads no Hugging Face cache")
    if policy.hub_allowed(env):
        return _from_hub(model_path, revision, env, policy, field_name)
    if policy.hub and offline(env):
        tried.append("the Hub is off (HF_HUB_OFFLINE=1)")
    elif not policy.hub:
        tried.append("this server does not read the Hub")
    if refusal is not None and policy.roots is not None:
        tried.append(f"not a directory under a model root ({refusal})")
    raise CheckpointError(field_name, f"{label}: not found: not a shipped checkpoint; {'; '.join(tried)}. "
                          f"{_ways(policy)} (GET /v1/presets lists the shipped ones)")


def _directory(model_path: str, folder: str, root: str | None, policy: ReadPolicy, field_name: str) -> Checkpoint:
    cfg = os.path.join(folder, CONFIG)
    try:
        stamp = os.stat(cfg).st_mtime_ns if os.path.exists(cfg) else 0
    except OSError:
        stamp = 0
    key = ("dir", folder, stamp, policy)
    hit = CACHE.get(key, None)
    if hit is not None:
        return _renamed(hit, model_path)
    try:
        found = _read(DirectoryReader(folder, policy, root), model_path, "directory", None, None, field_name)
    except ReadError as exc:
        raise CheckpointError(field_name, f"--model-path {model_path[:200]!r}: {exc}") from None
    CACHE.put(key, found)
    return found


def _renamed(found: Checkpoint, model_path: str) -> Checkpoint:
    if found.model_path == model_path:
        return found
    return Checkpoint(model_path, found.source, found.repo_id, found.revision, found.files, found.config,
                      found.inventory, found.preset)


def _from_cache(repo: str, revision: str | None, env: Mapping[str, str], policy: ReadPolicy, field_name: str) -> Checkpoint | None:
    from huggingface_hub import try_to_load_from_cache

    cache_dir = hub_cache_dir(env)
    hit = try_to_load_from_cache(repo, CONFIG, cache_dir=cache_dir, revision=revision)
    if not isinstance(hit, str):
        return None
    snapshot = os.path.dirname(hit)
    commit = os.path.basename(snapshot)
    key = ("cache", cache_dir, repo, commit, policy)
    found = CACHE.get(key, None)
    if found is None:
        try:
            # The cache's symlinks point into its own blobs/ folder: reads stay inside it.
            found = _read(DirectoryReader(snapshot, policy, os.path.realpath(cache_dir)), repo, "hf-cache", repo, commit, field_name)
        except ReadError as exc:
            raise CheckpointError(field_name, f"--model-path {repo!r} (Hugging Face cache): {exc}") from None
        CACHE.put(key, found)
    return found


def _from_hub(repo: str, revision: str | None, env: Mapping[str, str], policy: ReadPolicy, field_name: str) -> Checkpoint:
    endpoint = hub_endpoint(env)
    token = hub_token(env)
    # The token is part of the key (a gated repo's files differ by who asks) but only as a flag
    # of whether one was given: the key is never printed, still it holds no secret.
    key = ("hub", endpoint, repo, revision or "main", token is not None, hash(token), policy)
    hit = CACHE.get(key, HUB_TTL_S)
    if hit is not None:
        return hit
    reader = HubReader(repo, revision, endpoint=endpoint, token=token, cache_dir=hub_cache_dir(env), policy=policy)
    try:
        found = _read(reader, repo, "hub", repo, None, field_name)
    except HubError as exc:
        fix = "set HF_TOKEN to a token that may read it" if exc.status in (401, 403) else _ways(policy)
        raise CheckpointError(field_name, scrub(f"--model-path {repo!r} (Hub at {endpoint}): {exc}; {fix}", token)) from None
    except ReadError as exc:
        raise CheckpointError(field_name, scrub(f"--model-path {repo!r} (Hub at {endpoint}): {exc}", token)) from None
    found = Checkpoint(found.model_path, "hub", repo, reader.commit or revision, found.files, found.config, found.inventory)
    CACHE.put(key, found)
    return found
