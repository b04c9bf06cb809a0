"""`GET /docs`: the API reference as one HTML page rendered here from the OpenAPI document.

No script and nothing from elsewhere (FastAPI's default /docs loads Swagger UI from a CDN):
each operation with its summary, description, request bodies (media types and their
examples) and responses, linked to `/openapi.json`, which any OpenAPI viewer loads. The page
is rendered once per app, on first request, and served under a Content-Security-Policy that
lets the browser fetch only its stylesheet.
"""

from __future__ import annotations

import hashlib
import json
from html import escape
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

CSP = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
METHODS = ("get", "head", "post", "put", "patch", "delete")
MAX_EXAMPLE_CHARS = 4000  # an example longer than this is cut on the page (the document has it whole)

router = APIRouter(include_in_schema=False)


def _example_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)
    return text if len(text) <= MAX_EXAMPLE_CHARS else text[:MAX_EXAMPLE_CHARS] + "\n... (cut here; whole in /openapi.json)"


def _body(op: dict) -> list[str]:
    content = (op.get("requestBody") or {}).get("content") or {}
    out: list[str] = []
    for media, spec in content.items():
        out.append(f"<h4>request body: <code>{escape(media)}</code></h4>")
        for name, example in (spec.get("examples") or {}).items():
            summary = example.get("summary") or name
            out.append(f"<p>{escape(summary)}</p><pre>{escape(_example_text(example.get('value')))}</pre>")
    return out


def _responses(op: dict) -> list[str]:
    rows = "".join(
        f"<tr><td>{escape(str(code))}</td><td>{escape(str(spec.get('description', '')))}</td></tr>"
        for code, spec in (op.get("responses") or {}).items()
    )
    return [f"<table><thead><tr><th>status</th><th>meaning</th></tr></thead><tbody>{rows}</tbody></table>"] if rows else []


def render(doc: dict) -> bytes:
    info = doc.get("info") or {}
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}: API reference</title>",
        '<link rel="stylesheet" href="/static/docs.css"></head><body><main>',
        f"<h1>{escape(title)}: API reference</h1>",
        f"<p>{escape(str(info.get('description', '')))}</p>",
        ('<p>The whole contract, schemas included: <a href="/openapi.json">/openapi.json</a> (load it in any OpenAPI '
         'viewer or client). Every call with real output: docs/api-examples.md in the repository. '
         'The capacity explorer: <a href="/">/</a>.</p>'),
        "<nav><ul>",
    ]
    ops = [(path, method, op) for path, item in (doc.get("paths") or {}).items() for method in METHODS if (op := item.get(method))]
    for path, method, op in ops:
        anchor = escape(op.get("operationId") or f"{method}-{path}")
        parts.append(f'<li><a href="#{anchor}"><code>{method.upper()} {escape(path)}</code></a> {escape(op.get("summary", ""))}</li>')
    parts.append("</ul></nav>")
    for path, method, op in ops:
        anchor = escape(op.get("operationId") or f"{method}-{path}")
        parts.append(f'<section id="{anchor}"><h2><code>{method.upper()} {escape(path)}</code></h2>')
        if op.get("summary"):
            parts.append(f"<p><strong>{escape(op['summary'])}</strong></p>")
        if op.get("description"):
            parts.append(f"<pre class=\"text\">{escape(op['description'])}</pre>")
        parts.extend(_body(op))
        parts.extend(_responses(op))
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts).encode("utf-8")


@router.get("/docs")
async def docs(request: Request) -> Response:
    state = request.app.state
    page = getattr(state, "docs_page", None)
    if page is None:
        data = render(request.app.openapi())
        page = state.docs_page = (data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"')
    data, etag = page
    headers = {
        "ETag": etag,
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": CSP,
        "Referrer-Policy": "no-referrer",
    }
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(data, media_type="text/html; charset=utf-8", headers=headers)


__all__ = ["CSP", "render", "router"]
