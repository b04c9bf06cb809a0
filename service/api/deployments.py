"""The `--deployments` watch file: deployment name -> PlanRequest, written as YAML.

    qwen3-next-tp4:
      model: {preset: qwen3-next-80b-a3b-instruct}
      server_args: {tp_size: 4}
      budget: {rest_gib: 40}
    nemotron-pp4:
      model: {preset: nemotron-h-56b-base-8k}
      sglang_args: ["--tp-size", "2", "--pp-size", "4"]
      budget: {free_gib_before_load: 139.6, free_gib_after_load: 100.0, gpu_memory_mib: 143771}
      sglang_version: "0.5.16"      # the release it runs (default 0.5.23)
      upgrade_to: ["0.5.23"]        # also plan it at these releases (one, or a list)

Each entry is what `POST /v1/plan` takes; its `trial` is `true` or the trial options
(mambasizer.service.api.deployment_trials runs those trials after each load). Every deployment is planned
when the file is loaded, never at scrape time, and exported as `mambasizer_plan_*`
gauges (see mambasizer.service.api.metrics); an infeasible one is logged at warning with SGLang's
error. The file is re-read on SIGHUP, off the event loop (PyYAML's C loader where it was
built with libyaml), and swapped in as one reference, so probes and scrapes keep being
answered while a large file is planned. A name (or any key) written twice is an error,
not a silent override. A file that cannot be read or parsed keeps the previous
deployments (and says so in the log and in `mambasizer_deployments_last_reload_success`);
an entry that cannot be sized is reported
(`mambasizer_deployment_input_valid` = 0, the log, `/readyz`) without affecting the others.

`upgrade_to` (a release or a list, each a supported release other than the entry's own) plans
the entry again at each release named, with the same launch arguments parsed as that release
parses them; `mambasizer_plan_release_*{sglang_version, running}` carry the figures of every
release planned (the running one included), and a release that cannot load the model or
refuses the arguments exports `mambasizer_plan_release_feasible` 0 (the chart's
MambasizerUpgradeRegression alert reads them).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError

from mambasizer.schemas import Plan, PlanRequest
from mambasizer.schemas.releases import SUPPORTED_RELEASES
from mambasizer.schemas.trial import TrialOptions
from mambasizer.service.api import wire
from mambasizer.service.planner import plan
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.releases.sizing import release_label

log = logging.getLogger("mambasizer.deployments")



def _unique_keys(base: type) -> type:
    """`base` (a safe loader) refusing a key written twice in one mapping: YAML would keep
    the last silently, and two deployments of one name are a mistake, not an override."""

    class Loader(base):
        def construct_mapping(self, node, deep=False):
            seen: set = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark,
                            f"{key_node.value[:100]!r} is given twice", key_node.start_mark,
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    Loader.__name__ = f"Unique{base.__name__}"
    return Loader


# libyaml's parser when PyYAML was built with it (several times faster, so a reload of a
# large file holds the GIL for less time); the pure-Python safe loader otherwise.
YAML_LOADER = _unique_keys(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
MAX_FILE_BYTES = 16 << 20
MAX_DEPLOYMENTS = 1000
# A deployment name becomes a label value: keep it bounded and readable (as the Helm chart does).
NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$")


@dataclass(frozen=True)
class ReleasePlan:
    """The entry planned at one release of its `upgrade_to`: the Plan, or why that release refuses it."""

    sglang_version: str
    plan: Plan | None
    error: str | None = None  # "field: message" when the release cannot load the model or parse the arguments


class DeploymentsFileError(Exception):
    """The file as a whole cannot be used (unreadable, not YAML, not a mapping of names)."""


@dataclass(frozen=True)
class Deployment:
    name: str
    plan: Plan | None
    error: dict | None = None  # {"field", "message", "allowed"} when the entry cannot be sized
    ignored_sglang_args: list[str] | None = None
    # SGLang's model_name label (--served-model-name, else --model-path, from sglang_args),
    # so planned gauges join sglang:max_total_num_tokens; the plan's model name otherwise.
    metrics_model_name: str | None = None
    request: PlanRequest | None = None
    trial: TrialOptions | None = None  # the entry asks for a trial (`trial: true` or options)
    upgrades: tuple[ReleasePlan, ...] = ()  # the entry's `upgrade_to` releases, in the order given

    @property
    def model_name(self) -> str | None:
        return self.metrics_model_name or (self.plan.model_name if self.plan else None)


@dataclass(frozen=True)
class Snapshot:
    deployments: tuple[Deployment, ...] = ()
    loaded_at: float = 0.0
    path: str | None = None

    def summary(self) -> dict:
        return {
            "count": len(self.deployments),
            "invalid": {d.name: d.error for d in self.deployments if d.error is not None},
            "infeasible": [d.name for d in self.deployments if d.plan is not None and not d.plan.feasible],
        }


@dataclass
class DeploymentStore:
    path: str | None = None
    snapshot: Snapshot = field(default_factory=Snapshot)
    reloads_ok: int = 0
    reloads_failed: int = 0
    last_error: str | None = None
    # Called with each snapshot swapped in (start-up and every successful reload), from the
    # thread that loaded it: mambasizer.service.api.deployment_trials schedules the file's trials.
    listeners: list = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def configured(self) -> bool:
        return self.path is not None

    def load(self) -> Snapshot:
        """Read, plan and swap in the file; raise DeploymentsFileError (keeping the
        previous snapshot) when the file cannot be used."""
        with self._lock:
            try:
                snap = build_snapshot(self.path) if self.path else Snapshot()
            except DeploymentsFileError as exc:
                self.reloads_failed += 1
                self.last_error = str(exc)
                raise
            self.snapshot = snap  # one reference swap: scrapes see the old or the new set
            self.reloads_ok += 1
            self.last_error = None
        for d in snap.deployments:
            if d.error is not None:
                log.warning(
                    "deployment cannot be sized",
                    extra={"fields": {"event": "deployment_invalid", "deployment": d.name, **d.error}},
                )
            elif d.plan is not None and not d.plan.feasible:
                err = d.plan.error
                log.warning(
                    "deployment is infeasible: %s would not start", release_label(d.plan.reference),
                    extra={"fields": {
                        "event": "deployment_infeasible", "deployment": d.name, "kind": err.kind if err else None,
                        "exception": err.exception if err else None, "error": err.message if err else None,
                    }},
                )
            for up in d.upgrades:
                if up.plan is None or not up.plan.feasible:
                    why = up.error if up.plan is None else (up.plan.error.message if up.plan.error else None)
                    log.warning(
                        "deployment would not start at an upgrade_to release",
                        extra={"fields": {"event": "deployment_upgrade_infeasible", "deployment": d.name,
                                          "sglang_version": up.sglang_version, "error": why}},
                    )
        for listener in self.listeners:
            try:
                listener(snap)
            except Exception:  # a listener never undoes a load
                log.exception("deployments listener failed", extra={"fields": {"event": "deployments_listener_failed"}})
        if self.path is None:
            return snap
        log.info(
            "deployments loaded",
            extra={"fields": {"event": "deployments_loaded", "path": self.path, "count": len(snap.deployments), "invalid": sum(d.error is not None for d in snap.deployments)}},
        )
        return snap

    def reload(self) -> bool:
        """SIGHUP: load again; on failure keep serving the previous deployments."""
        try:
            self.load()
            return True
        except DeploymentsFileError as exc:
            log.error(
                "deployments reload failed; keeping the previous deployments",
                extra={"fields": {"event": "deployments_reload_failed", "path": self.path, "error": str(exc)}},
            )
            return False
        except Exception:  # never let a signal handler kill the server
            log.exception("deployments reload failed unexpectedly; keeping the previous deployments")
            with self._lock:
                self.reloads_failed += 1
                self.last_error = "internal error while reloading"
            return False


def build_snapshot(path: str) -> Snapshot:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise DeploymentsFileError(f"cannot read the deployments file: {exc.strerror or type(exc).__name__}") from None
    if len(data) > MAX_FILE_BYTES:
        raise DeploymentsFileError(f"the deployments file is larger than {MAX_FILE_BYTES} bytes")
    try:
        doc = yaml.load(data, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        why = f": {' '.join(str(problem).split())[:200]}" if problem else ""
        raise DeploymentsFileError(f"the deployments file is not valid YAML{where}{why}") from None
    except RecursionError:
        raise DeploymentsFileError("the deployments file is nested too deeply") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise DeploymentsFileError(f"the deployments file must map deployment names to requests, not hold a {type(doc).__name__}")
    if len(doc) > MAX_DEPLOYMENTS:
        raise DeploymentsFileError(f"the deployments file has {len(doc)} deployments; at most {MAX_DEPLOYMENTS}")
    deployments = []
    for name, entry in doc.items():
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise DeploymentsFileError(
                f"deployment name {str(name)[:200]!r} must be 1-128 letters, digits, '.', '_' or '-', "
                "starting and ending with a letter or digit"
            )
        deployments.append(_plan_entry(name, entry))
    return Snapshot(tuple(deployments), time.time(), path)


def _plan_entry(name: str, entry: object) -> Deployment:
    try:
        if not isinstance(entry, dict):
            raise PlanInputError("request", "must be a mapping (a PlanRequest)")
        entry = dict(entry)
        trial = _trial_options(entry.pop("trial", None))
        targets = _upgrade_to(entry.pop("upgrade_to", None))
        prepared = wire.prepare(entry, allow_trial=False)
        if prepared.request.sglang_version in targets:
            raise PlanInputError("upgrade_to", f"{prepared.request.sglang_version} is the release the deployment runs "
                                 "(its sglang_version); name the releases to upgrade to")
        upgrades = tuple(_plan_at(entry, version) for version in targets)
        return Deployment(name, plan(prepared.request), None, prepared.ignored_sglang_args, prepared.metrics_model_name,
                          prepared.request, trial, upgrades)
    except PlanInputError as exc:
        error: dict[str, Any] = {"field": exc.field, "message": exc.message}
        if exc.allowed:
            error["allowed"] = [str(a) for a in exc.allowed]
        return Deployment(name, None, error)
    except (RecursionError, MemoryError):
        return Deployment(name, None, {"field": "request", "message": "is nested too deeply or too large to size"})
    except Exception:  # one entry the solver trips on never takes the others (or start-up) down
        log.exception("deployment could not be planned", extra={"fields": {"event": "deployment_plan_failed", "deployment": name}})
        return Deployment(name, None, {"field": "request", "message": "could not be planned (an internal error; see the server log)"})


def _upgrade_to(raw: Any) -> tuple[str, ...]:
    """`upgrade_to`: absent, a release, or a list of distinct releases (bounded by the releases there are)."""
    if raw is None:
        return ()
    values = [raw] if isinstance(raw, str) else raw
    if not isinstance(values, list) or not values:
        raise PlanInputError("upgrade_to", "must be a release (e.g. \"0.5.23\") or a list of releases")
    if len(values) > len(SUPPORTED_RELEASES):
        raise PlanInputError("upgrade_to", f"names {len(values)} releases; there are {len(SUPPORTED_RELEASES)}")
    for value in values:
        if not isinstance(value, str) or value not in SUPPORTED_RELEASES:
            raise PlanInputError("upgrade_to", f"{str(value)[:40]!r} is not a supported SGLang release", SUPPORTED_RELEASES)
    if len(set(values)) != len(values):
        raise PlanInputError("upgrade_to", "names a release twice")
    return tuple(values)


def _plan_at(entry: dict, version: str) -> ReleasePlan:
    """The entry at `version`: its launch arguments parsed as that release parses them."""
    try:
        return ReleasePlan(version, plan(wire.prepare({**entry, "sglang_version": version}, allow_trial=False).request))
    except PlanInputError as exc:
        return ReleasePlan(version, None, f"{exc.field}: {exc.message}")


def _trial_options(raw: Any) -> TrialOptions | None:
    """`trial: true` runs the default trial, a mapping gives its options, false/absent none."""
    if raw is None or raw is False:
        return None
    if raw is True:
        return TrialOptions()
    if not isinstance(raw, dict):
        raise PlanInputError("trial", "must be true, false or a mapping of trial options (device, stages, budget, "
                             "hold_weights_gib, timeout_s)")
    try:
        return TrialOptions.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise PlanInputError(f"trial.{where}" if where else "trial", err["msg"]) from None
