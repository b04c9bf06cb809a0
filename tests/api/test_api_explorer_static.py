"""`GET /` and `/static/*`: the explorer page is served by the app from package data, small,
with a policy that lets the browser load nothing from elsewhere; no SGLang rule in its script."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

from api_helpers import assert_problem
from mambasizer.service.api.explorer import CSP, FILES, PAGE_BYTES

ROOT = Path(__file__).resolve().parents[2]


def test_page_and_assets(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == CSP
    assert "default-src 'none'" in CSP and "connect-src 'self'" in CSP and "script-src 'self'" in CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    html = page.text
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert sorted(assets) == ["/static/explorer.css", "/static/explorer.js"]
    total = len(page.content)
    for path, media in (("/static/explorer.js", "text/javascript; charset=utf-8"), ("/static/explorer.css", "text/css; charset=utf-8")):
        resp = client.get(path)
        assert resp.status_code == 200 and resp.headers["content-type"] == media
        total += len(resp.content)
    assert total == PAGE_BYTES < 300_000, total
    # nothing outside the service: no absolute URL in any file (the SVG namespace is a name, not a fetch)
    for name, (data, _, _) in FILES.items():
        urls = set(re.findall(rb"https?://[^\s\"'`)]+", data)) - {b"http://www.w3.org/2000/svg"}
        assert urls == set(), (name, urls)


def test_revalidation_and_unknown_files(client):
    first = client.get("/static/explorer.js")
    again = client.get("/static/explorer.js", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert_problem(client.get("/static/nope.js"), 404, field="name")
    assert_problem(client.get("/static/index.html"), 404, field="name")
    assert_problem(client.get("/static/..%2Fsecret.txt"), 404)
    assert client.post("/").status_code == 405


def test_the_page_is_package_data():
    """The wheel ships service/api/static/* (pyproject package-data covers every file there)."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = conf["tool"]["setuptools"]["package-data"]["mambasizer.service.api"]
    static = ROOT / "service" / "api" / "static"
    shipped = {p.name for pat in patterns for p in static.glob(pat.removeprefix("static/"))}
    assert shipped == {p.name for p in static.iterdir()} == set(FILES)


def test_the_script_holds_no_sizing_rule():
    """Every figure comes from /v1: the script calls the API and names no SGLang constant."""
    js = FILES["explorer.js"][0].decode()
    assert set(re.findall(r'api\("(?:GET|POST)", "([^"]+)"', js)) == {"/v1/plan", "/v1/sweep", "/v1/recommend", "/v1/presets", "/v1/gpus", "/openapi.json"}
    for word in ("mem_fraction_static *", "0.88", "0.9 *", "mamba_ratio", "page_size *", "get_available_gpu_memory"):
        assert word not in js, word
