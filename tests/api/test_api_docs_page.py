"""`GET /docs`: a local API reference page, nothing fetched from a CDN, under a CSP."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from mambasizer.service.api.app import create_app
from mambasizer.service.api.explorer import FILES


def test_docs_is_a_local_page_with_every_operation(client):
    r = client.get("/docs")
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    csp = r.headers["content-security-policy"]
    assert csp.startswith("default-src 'none';") and "script-src" not in csp and "style-src 'self'" in csp
    page = r.text
    assert "<script" not in page
    # every URL the page loads or links is this service's own
    urls = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert urls and all(u.startswith(("/", "#")) and not u.startswith("//") for u in urls), urls
    assert "cdn" not in page.lower()
    doc = client.get("/openapi.json").json()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert f'<section id="{op["operationId"]}"><h2><code>{method.upper()} {path}</code></h2>' in page, (method, path)
    assert client.get("/static/docs.css").status_code == 200 and "docs.css" in FILES


def test_docs_revalidates_with_its_etag():
    with TestClient(create_app()) as c:
        first = c.get("/docs")
        again = c.get("/docs", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_no_swagger_cdn_route_is_left(client):
    assert client.get("/docs/oauth2-redirect").status_code == 404
