"""`GET /`: the capacity explorer page, and `GET /static/<file>` for its script and stylesheet.

The files ship inside the package (`service/api/static/`, package data in pyproject.toml) and
are read once, when this module is imported. The page draws its charts itself (SVG) and talks
only to this service; its Content-Security-Policy lets the browser load nothing from elsewhere.
"""

from __future__ import annotations

import hashlib
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mambasizer.service.api.problems import problem_response

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
MEDIA_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
PAGE_FILES = ("index.html", "explorer.js", "explorer.css")  # the explorer page
STATIC_FILES = (*PAGE_FILES, "docs.css")  # docs.css: the /docs page's (service/api/docs_page.py)


def _load() -> dict[str, tuple[bytes, str, str]]:
    root = resources.files("mambasizer.service.api").joinpath("static")
    out = {}
    for name in STATIC_FILES:
        data = root.joinpath(name).read_bytes()
        media = MEDIA_TYPES[name[name.rindex("."):]]
        out[name] = (data, media, '"' + hashlib.sha256(data).hexdigest()[:32] + '"')
    return out


FILES = _load()
PAGE_BYTES = sum(len(FILES[name][0]) for name in PAGE_FILES)

router = APIRouter(include_in_schema=False)


def _serve(request: Request, name: str) -> Response:
    data, media, etag = FILES[name]
    headers = {
        "ETag": etag,
        "Cache-Control": "no-cache",  # revalidate: an upgraded service serves its own page
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": CSP,
        "Referrer-Policy": "no-referrer",
    }
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media, headers=headers)


@router.get("/")
async def page(request: Request) -> Response:
    return _serve(request, "index.html")


@router.get("/static/{name}")
async def static(request: Request, name: str) -> Response:
    if name not in FILES or name == "index.html":
        return problem_response(404, f"no file /static/{name[:64]}", instance=request.url.path[:128], field="name")
    return _serve(request, name)


__all__ = ["CSP", "FILES", "PAGE_BYTES", "router"]
