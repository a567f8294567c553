"""The translation page at ``/``: plain HTML, CSS and a small script shipped in the package
(``nmtkit/serving/static/``), read once when the app is built, served with a
Content-Security-Policy that lets the page run only its own script and talk only to this
server. The page itself uses nothing but the JSON API (``GET /model``, ``POST /translate``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from fastapi import FastAPI
from fastapi.responses import Response

# Only this server's own files and API; no inline script or style markup, no frames, no forms
# posted elsewhere. (Styles set through the DOM, the heatmap's shades, are not markup.)
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
FILES = {  # path -> (file in static/, media type)
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/page.js": ("page.js", "text/javascript; charset=utf-8"),
    "/static/page.css": ("page.css", "text/css; charset=utf-8"),
}


def add_page(app: FastAPI) -> None:
    """Serve the page's files at ``/`` and ``/static/``, left out of the API's schema."""
    folder = resources.files("nmtkit.serving") / "static"
    for path, (name, media_type) in FILES.items():
        body = (folder / name).read_bytes()
        app.add_api_route(
            path,
            _responder(body, media_type),
            methods=["GET"],
            include_in_schema=False,
        )


def _responder(body: bytes, media_type: str) -> Callable[[], Awaitable[Response]]:
    async def respond() -> Response:
        return Response(body, media_type=media_type, headers=HEADERS)

    return respond
