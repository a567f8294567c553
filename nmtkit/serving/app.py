"""The FastAPI app: ``POST /translate``, ``GET /health`` and ``GET /model`` over one
Translator, with the batcher's worker thread started and drained by the app's lifespan, and
the translation page at ``/`` over them.

Every error answers JSON ``{"error": "one line"}``: 413 for a request over the size limits,
422 for invalid JSON, wrong types or search settings, 429 when the queue is full, 404 and 405
for a wrong path or method, 503 while shutting down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nmtkit import __version__
from nmtkit.errors import ConfigError, NmtkitError
from nmtkit.serving.batcher import Batcher, BatcherClosed, QueueFull
from nmtkit.serving.info import describe_model
from nmtkit.serving.limits import ServeLimits
from nmtkit.serving.page import add_page
from nmtkit.serving.schema import (
    ErrorBody,
    Health,
    TranslateRequest,
    TranslateResponse,
    translation_out,
)
from nmtkit.serving.variants import Decoding, Sentence, TranslatorPool
from nmtkit.terminology.glossary import Glossary, Term
from nmtkit.translation.results import Translation
from nmtkit.translation.translator import Translator

log = logging.getLogger(__name__)

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in (
        (413, "Too many sentences, a sentence too long, or a body too large."),
        (422, "Invalid JSON, a value of the wrong type, or search settings out of range."),
        (429, "The queue is full: try again shortly (Retry-After)."),
        (503, "The server is shutting down."),
    )
}


def build_app(
    translator: Translator, *, limits: ServeLimits | None = None, page: bool = True
) -> FastAPI:
    """The translation server's app: requests are checked on the event loop, and their
    sentences decoded in shared batches by one worker thread (:class:`Batcher`), which the
    app's lifespan starts and, at shutdown, drains. With ``page``, a person's page at ``/``
    (:mod:`nmtkit.serving.page`) over the same API.

    A request without search settings gets the model's own search; the ``translator``'s
    batch size, output cap, length policy, precision and shortlist apply to every request.

    Raises:
        ConfigError: the model's own search keeps more hypotheses than ``limits.max_beam``.
    """
    limits = limits or ServeLimits()
    pool = TranslatorPool(translator, max_beam=limits.max_beam)
    batcher: Batcher[Decoding, Sentence, Translation] = Batcher(
        pool.translate,
        wait_s=limits.batch_wait_ms / 1000,
        max_batch_sentences=limits.max_batch_sentences,
        max_queue=limits.max_queue,
    )
    info = describe_model(translator, default=pool.default, limits=limits)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        batcher.start()
        try:
            yield
        except BaseException:  # a forced stop cancels the lifespan: drop the queued requests
            batcher.close(drop_queued=True)
            batcher.join()  # the batch being decoded: torch must not be running at exit
            raise
        batcher.close()
        await asyncio.to_thread(batcher.join)
        done = batcher.stats()
        log.info("translated %d sentences in %d batches", done.sentences, done.batches)

    app = FastAPI(
        title="nmtkit",
        version=__version__,
        summary=f"Translation {info['src_lang']} -> {info['tgt_lang']} with an nmtkit model.",
        lifespan=lifespan,
    )
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    _add_error_handlers(app)
    _add_routes(app, pool=pool, batcher=batcher, limits=limits, info=info)
    if page:
        add_page(app)
    return app


MAX_GLOSSARY_ENTRIES = 10_000  # a request's own glossary


def _add_routes(
    app: FastAPI,
    *,
    pool: TranslatorPool,
    batcher: Batcher[Decoding, Sentence, Translation],
    limits: ServeLimits,
    info: dict[str, Any],
) -> None:
    @app.post(
        "/translate",
        response_model=TranslateResponse,
        response_model_exclude_none=True,
        responses=_ERRORS,
    )
    async def translate(request: TranslateRequest) -> TranslateResponse:
        """Translate one sentence or a list of them; the answer keeps their order."""
        lines = request.lines()
        check_lines(lines, limits)
        try:
            prefixes = request.prefixes()
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        if prefixes is None:
            prefixes = [""] * len(lines)
        else:
            check_lines(prefixes, limits, field="prefix")
        try:
            decoding = pool.resolve(request.settings())
        except ConfigError as exc:
            raise HTTPException(422, str(exc)) from None
        constraints, glossary = _terms(request, pool, limits, lines=len(lines))
        if (glossary or any(constraints)) and not decoding.constrainable:
            raise HTTPException(
                422,
                "constraints and terminology need beam search with a beam of 2 or more"
                + (' (send "terminology": [] to go without the server\'s)' if glossary else ""),
            )
        sentences = [
            Sentence(text=t, prefix=p, constraints=c, glossary=glossary)
            for t, p, c in zip(lines, prefixes, constraints, strict=True)
        ]
        try:
            future = batcher.submit(decoding, sentences)
        except QueueFull as exc:
            raise HTTPException(429, str(exc), headers={"Retry-After": "1"}) from None
        except BatcherClosed as exc:
            raise HTTPException(503, str(exc)) from None
        try:
            found = await asyncio.wrap_future(future)
        except NmtkitError as exc:  # a constraint longer than its sentence's output cap
            raise HTTPException(422, str(exc)) from None
        shown = {
            "nbest": decoding.nbest > 1,
            "alignment": request.alignment,
            "attention": request.attention,
        }
        return TranslateResponse(translations=[translation_out(t, **shown) for t in found])

    @app.get("/health", response_model=Health)
    async def health() -> Health:
        """Say that the server is up, with its queue and what it has decoded."""
        stats = batcher.stats()
        return Health(
            status="ok",
            queued_sentences=stats.queued,
            batches=stats.batches,
            sentences=stats.sentences,
        )

    @app.get("/model")
    async def model() -> dict[str, Any]:
        """Describe the model (checkpoint SHA-256, config, languages, vocabulary sizes), the
        nmtkit version, the default search and the server's limits."""
        return info


def _terms(
    request: TranslateRequest, pool: TranslatorPool, limits: ServeLimits, *, lines: int
) -> tuple[list[tuple[Term, ...]], Glossary | None]:
    """Each sentence's constraints and the request's glossary (the server's when it gives
    none), checked against the limits: 422 for malformed ones, 413 for too many or too long."""
    try:
        constraints = request.phrases() or [()] * lines
        entries = request.glossary_entries()
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    for i, phrases in enumerate(constraints):
        check_lines([term.target for term in phrases], limits, field=f"constraints[{i}]")
    if entries is None:
        return constraints, pool.base.glossary
    if len(entries) > MAX_GLOSSARY_ENTRIES:
        raise HTTPException(
            413,
            f"{len(entries)} terminology entries in one request; this server takes at most "
            f"{MAX_GLOSSARY_ENTRIES} (a larger glossary goes to nmtkit serve --terminology)",
        )
    check_lines([e.source or "" for e in entries], limits, field="terminology source")
    check_lines([e.target for e in entries], limits, field="terminology target")
    try:
        return constraints, Glossary(entries, pool.base.loaded.src_text) if entries else None
    except NmtkitError as exc:
        raise HTTPException(422, str(exc)) from None


def check_lines(lines: Sequence[str], limits: ServeLimits, *, field: str = "text") -> None:
    """Refuse a request over ``max_sentences`` or with a sentence (or prefix: ``field``) over
    ``max_chars`` (413), or with one that is not Unicode text (422: a lone surrogate, which
    JSON can spell)."""
    if len(lines) > limits.max_sentences:
        raise HTTPException(
            413,
            f"{len(lines)} sentences in one request; this server takes at most "
            f"{limits.max_sentences} (--max-sentences)",
        )
    for i, line in enumerate(lines):
        if len(line) > limits.max_chars:
            raise HTTPException(
                413,
                f"{field}[{i}] has {len(line)} characters; this server takes at most "
                f"{limits.max_chars} a sentence (--max-chars)",
            )
        try:
            line.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise HTTPException(
                422,
                f"{field}[{i}] is not Unicode text: a lone surrogate at character {exc.start}",
            ) from None


def error_response(
    status: int, message: str, *, detail: Any = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    body = {"error": message} if detail is None else {"error": message, "detail": detail}
    return JSONResponse(body, status_code=status, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        # The input is left out: it may be the whole body, or a number JSON cannot write (NaN).
        detail = [{key: e.get(key) for key in ("type", "loc", "msg")} for e in errors]
        return error_response(422, describe_errors(errors), detail=jsonable_encoder(detail))

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such path: {request.url.path} (the API is listed at /docs)"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        return error_response(exc.status_code, message, headers=exc.headers)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        # A bug: uvicorn logs the traceback after this answer is sent.
        return error_response(500, f"internal error: {type(exc).__name__}: {exc}")


_NOT_AN_OBJECT = (
    'the body must be a JSON object such as {"text": ["A sentence."]}, sent with '
    "Content-Type: application/json"
)


def describe_errors(errors: Sequence[Any]) -> str:
    """pydantic's validation errors in one line, e.g. ``beam_size: Input should be a valid
    integer``."""
    parts: list[str] = []
    for error in errors:
        kind, loc = error.get("type"), [part for part in error.get("loc", ()) if part != "body"]
        if kind == "json_invalid":
            reason = error.get("ctx", {}).get("error", error.get("msg", ""))
            return f"the body is not valid JSON: {reason}"
        if not loc:
            return _NOT_AN_OBJECT
        if loc[0] == "text" and kind != "missing":  # str | list[str]: both arms are reported
            message = (
                f"text[{loc[2]}]: should be a string"
                if len(loc) > 2
                else "text: should be a string or a list of strings"
            )
        else:
            message = f"{'.'.join(map(str, loc))}: {error.get('msg', kind)}"
        if message not in parts:
            parts.append(message)
    return "; ".join(parts) or "invalid request"


class BodyLimit:
    """Refuse (413) a request body over ``max_bytes`` before it is parsed: by its declared
    Content-Length, or, for a chunked body, once that many bytes have arrived."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        declared = headers.get(b"content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        over = False

        async def limited() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    over = True
                    return {"type": "http.disconnect"}  # the app stops reading
            return message

        async def unless_over(message: Message) -> None:
            if not over:
                await send(message)

        await self.app(scope, limited, unless_over)
        if over:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body is over {self.max_bytes} bytes"
        await error_response(413, message, headers={"Connection": "close"})(scope, receive, send)
