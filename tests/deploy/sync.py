"""Regenerate the deployment files that are derived from others, or check they are current.

* `$defs.PlanRequest` in helm/mambasizer/values.schema.json is the pydantic wire contract
  (schemas.PlanRequest), so `helm install` rejects a bad `deployments` entry or preflight
  request by the same rules the API applies; `$defs.DeploymentEntry` (a `deployments`
  entry) is the same plus `trial` and `upgrade_to`.
* helm/preflight-hook/mambasizer-preflight-job.yaml (copy-paste template) carries the
  library chart's helm/mambasizer-preflight/templates/_preflight.tpl verbatim.
* helm/mambasizer/charts/mambasizer-preflight-<version>.tgz, the library chart vendored as
  the mambasizer chart's dependency, holds the library chart's current files (rebuilt with
  `helm dependency update`, which also rewrites Chart.lock).

    .venv/bin/python tests/deploy/sync.py          # rewrite the derived files
    .venv/bin/python tests/deploy/sync.py --check  # exit 1 and name the stale ones
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELM = ROOT / "helm"
VALUES_SCHEMA = HELM / "mambasizer" / "values.schema.json"
CHART = HELM / "mambasizer"
LIBRARY = HELM / "mambasizer-preflight"
LIBRARY_TPL = LIBRARY / "templates" / "_preflight.tpl"
STANDALONE = HELM / "preflight-hook" / "mambasizer-preflight-job.yaml"
PREFIX = "#/$defs/PlanRequest/$defs/"

STANDALONE_HEAD = """\
{{- /*
mambasizer preflight hook, copy-paste form. GENERATED from
helm/mambasizer-preflight/templates/_preflight.tpl by tests/deploy/sync.py: do not edit here.

Copy this file into your SGLang chart's templates/ directory and add the
`mambasizerPreflight` block of helm/preflight-hook/values-snippet.yaml to its values.
Every `helm install` / `helm upgrade` then first runs `mambasizer check` in a Job and
stops, with one readable line, when SGLang 0.5.23 would not start or a requirement
is missed.
*/ -}}
{{- with .Values.mambasizerPreflight }}
{{- if .enabled }}
{{ include "mambasizer-preflight.job" (dict "root" $ "values" .) }}
{{- end }}
{{- end }}
"""


def _rewrite_refs(node):
    if isinstance(node, dict):
        return {
            k: (PREFIX + v[len("#/$defs/"):]
                if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/")
                else _rewrite_refs(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


def sglang_args_schema() -> dict:
    """What POST /v1/plan and the deployments file take besides a PlanRequest: SGLang launch
    arguments in place of `server_args`, with the API's own limits (service/api/wire.py)."""
    from mambasizer.service.api import wire

    return {
        "type": "array",
        "maxItems": wire.MAX_SGLANG_ARGS,
        "items": {"type": "string", "maxLength": wire.MAX_SGLANG_ARG_CHARS},
        "description": "SGLang 0.5.23 launch arguments, in place of server_args (as POST /v1/plan takes them).",
    }


def plan_request_schema() -> dict:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from mambasizer.schemas import PlanRequest
    from mambasizer.schemas.json_schema import standard_bounds

    schema = _rewrite_refs(standard_bounds(PlanRequest.model_json_schema(mode="validation")))
    schema["properties"]["sglang_args"] = sglang_args_schema()
    schema["not"] = {"required": ["server_args", "sglang_args"]}
    return schema


def deployment_entry_schema() -> dict:
    """A `deployments` entry: a PlanRequest plus `trial` (true, false or the trial options) and
    `upgrade_to` (the releases to plan it at besides its own),
    which mambasizer.service.api.deployments takes and POST /v1/plan's own schema does not."""
    from mambasizer.schemas.trial import TrialOptions

    schema = plan_request_schema()
    del schema["$defs"]  # its references point into $defs.PlanRequest's
    schema["properties"]["trial"] = {
        "anyOf": [{"type": "boolean"}, TrialOptions.model_json_schema(mode="validation")],
        "description": "Run a trial of this deployment after each load (true: the default options).",
    }
    from mambasizer.schemas.releases import SUPPORTED_RELEASES

    release = {"type": "string", "enum": list(SUPPORTED_RELEASES)}
    schema["properties"]["upgrade_to"] = {
        "anyOf": [release, {"type": "array", "items": release, "minItems": 1, "maxItems": len(SUPPORTED_RELEASES), "uniqueItems": True}],
        "description": "Also plan this deployment at these SGLang releases (mambasizer_plan_release_*; the "
        "MambasizerUpgradeRegression alert fires when one plans fewer requests or tokens, or would not start).",
    }
    schema["title"] = "DeploymentEntry"
    return schema


def wanted_files() -> dict[Path, str]:
    schema = json.loads(VALUES_SCHEMA.read_text())
    schema.setdefault("$defs", {})["PlanRequest"] = plan_request_schema()
    schema["$defs"]["DeploymentEntry"] = deployment_entry_schema()
    schema["properties"]["deployments"]["additionalProperties"] = {"$ref": "#/$defs/DeploymentEntry"}
    return {
        VALUES_SCHEMA: json.dumps(schema, indent=2) + "\n",
        STANDALONE: STANDALONE_HEAD + LIBRARY_TPL.read_text(),
    }


def library_version() -> str:
    import yaml

    return str(yaml.safe_load((LIBRARY / "Chart.yaml").read_text())["version"])


def vendored_library() -> Path:
    return CHART / "charts" / f"mambasizer-preflight-{library_version()}.tgz"


def library_files() -> dict[str, bytes]:
    """The library chart's files as `helm package` archives them (under its name)."""
    return {f"mambasizer-preflight/{p.relative_to(LIBRARY).as_posix()}": p.read_bytes()
            for p in sorted(LIBRARY.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def archive_files(path: Path) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(path.read_bytes()), mode="r:gz") as tar:
        return {m.name: _read_member(tar, m) for m in tar.getmembers() if m.isfile()}


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    f = tar.extractfile(member)
    assert f is not None  # a regular file member always has a stream
    return f.read()


def _comparable(files: dict[str, bytes]) -> dict[str, object]:
    # `helm package` re-serialises Chart.yaml (key order, folding): compare it as data.
    import yaml

    return {name: yaml.safe_load(data) if name.endswith("/Chart.yaml") else data for name, data in files.items()}


def vendored_library_is_current() -> bool:
    archive = vendored_library()
    others = [p for p in (CHART / "charts").glob("*") if p != archive]
    return (archive.exists() and not others
            and _comparable(archive_files(archive)) == _comparable(library_files()))


def stale() -> list[Path]:
    bad = [p for p, text in wanted_files().items() if not p.exists() or p.read_text() != text]
    if not vendored_library_is_current():
        bad.append(vendored_library())
    return bad


def main(argv: list[str]) -> int:
    if "--check" in argv:
        bad = stale()
        for p in bad:
            print(f"{p.relative_to(ROOT)} is stale: run .venv/bin/python tests/deploy/sync.py", file=sys.stderr)
        return 1 if bad else 0
    for p, text in wanted_files().items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    if not vendored_library_is_current():
        import helm_python

        for old in (CHART / "charts").glob("mambasizer-preflight-*.tgz"):
            old.unlink()
        helm_python.dependency_update(str(CHART))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
