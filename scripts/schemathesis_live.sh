#!/usr/bin/env bash
# The deep contract run against a served instance (issue 25): `mambasizer serve` on a free
# port, then schemathesis over HTTP with every check, every phase (stateful included) and
# 200 examples per operation, twice: with the project's schemathesis.toml (its check that a
# 422 for a schema-valid body names a field the operation lists in x-semantic-fields) and
# without it (schemathesis' defaults: every such 422 is reported as ST202; the summary lists
# each one's field so it can be checked against x-semantic-fields).
#
#   scripts/schemathesis_live.sh [EXAMPLES]     # default 200; ~5 min on 2 cores
#
# Output: the two schemathesis summaries and, for the run without the config, each
# rejected field beside whether its operation declares it. Exit 0 when the run with the
# config finds nothing and every field reported without it is declared.
set -uo pipefail
cd "$(dirname "$0")/.."
EXAMPLES="${1:-200}"
PY=.venv/bin/python
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OUT=$(mktemp -d)
.venv/bin/mambasizer serve --port "$PORT" >"$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT
for _ in $(seq 60); do curl -sf "http://127.0.0.1:$PORT/livez" >/dev/null && break; sleep 0.5; done
ARGS=(--url "http://127.0.0.1:$PORT" --checks all --max-examples "$EXAMPLES"
      --phases examples,coverage,fuzzing,stateful --seed 20261204)
.venv/bin/schemathesis run openapi.json "${ARGS[@]}" >"$OUT/with_config.txt" 2>&1
WITH=$?
mkdir "$OUT/bare" && cp openapi.json "$OUT/bare/"
(cd "$OUT/bare" && "$OLDPWD/.venv/bin/schemathesis" run openapi.json "${ARGS[@]}" >"$OUT/without_config.txt" 2>&1)
echo "== with schemathesis.toml (exit $WITH)"
sed -n '/SUMMARY/,$p' "$OUT/with_config.txt"
echo "== without it"
sed -n '/SUMMARY/,$p' "$OUT/without_config.txt"
$PY - "$OUT/without_config.txt" <<'EOF'
# Each reported case is replayed from its "Reproduce with" curl line (the printed answer is
# truncated) and the 422's field is looked up in its operation's x-semantic-fields.
import json, shlex, sys, urllib.error, urllib.request
doc = json.load(open("openapi.json"))
undeclared = 0
seen = set()
for line in open(sys.argv[1]):
    if not line.strip().startswith("curl -X POST"):
        continue
    argv = shlex.split(line.strip())
    body, url = argv[argv.index("-d") + 1], argv[-1]
    path = "/" + url.split("/", 3)[3]
    try:
        urllib.request.urlopen(urllib.request.Request(url, body.encode(), {"Content-Type": "application/json"}), timeout=60)
        continue
    except urllib.error.HTTPError as exc:
        code, answer = exc.code, json.loads(exc.read() or b"{}")
    field = answer.get("field") or ""
    if code != 422 or (path, field) in seen:
        continue
    seen.add((path, field))
    op = doc["paths"].get(path, {}).get("post", {})
    content = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    name = content.get("$ref", "").rsplit("/", 1)[-1]
    declared = doc["components"]["schemas"].get(name, content).get("x-semantic-fields", [])
    ok = any(field == d or field.startswith(d + ".") for d in declared)
    undeclared += not ok
    print(f"  422 on {path} names {field or '(no field)'}: {'declared in x-semantic-fields' if ok else 'NOT DECLARED'}")
sys.exit(1 if undeclared else 0)
EOF
FIELDS=$?
exit $(( WITH != 0 || FIELDS != 0 ))
