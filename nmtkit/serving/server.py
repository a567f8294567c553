"""Run the app under uvicorn on a bound socket until SIGTERM or Ctrl-C, then stop gracefully:
no new connections, every request in flight answered, the batcher drained.

Needs the ``serve`` extra: import this module after
:func:`nmtkit.serving.listener.check_installed`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Iterator
from types import FrameType

import uvicorn

from nmtkit.errors import Interrupted
from nmtkit.serving.app import build_app
from nmtkit.serving.limits import ServeLimits
from nmtkit.serving.listener import socket_url
from nmtkit.translation.translator import Translator

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class GracefulServer(uvicorn.Server):
    """uvicorn's server with nmtkit's stop signals: SIGTERM or Ctrl-C stops it gracefully
    (a second Ctrl-C forces it), and the signal is not raised again afterwards, as uvicorn
    does, so the command's own handlers do not turn a clean stop into an error."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stopped_by: str | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {signum: signal.signal(signum, self._stop) for signum in STOP_SIGNALS}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        if self.should_exit and signum == signal.SIGINT:
            # The requests in flight get cancelled: expected, not errors to log with tracebacks.
            logging.getLogger("uvicorn.error").disabled = True
            self.force_exit = True
            return
        self.stopped_by = signal.Signals(signum).name
        self.should_exit = True


def serve(
    translator: Translator,
    listener: socket.socket,
    *,
    limits: ServeLimits | None = None,
    access_log: bool = False,
    page: bool = True,
) -> None:
    """Serve ``translator`` on ``listener`` (:func:`~nmtkit.serving.listener.listen`) until
    SIGTERM or Ctrl-C, and return once every request in flight is answered; with ``page``,
    the translation page at ``/`` too.

    Raises:
        ConfigError: the model's own search keeps more hypotheses than ``limits.max_beam``.
        Interrupted: a second Ctrl-C forced the stop before the requests in flight were done.
    """
    app = build_app(translator, limits=limits, page=page)
    config = uvicorn.Config(
        app,
        log_config=None,  # the command's logging stands
        access_log=access_log,
        lifespan="on",
        timeout_graceful_shutdown=None,  # in-flight work is bounded by --max-queue
    )
    server = GracefulServer(config)
    url = socket_url(listener)
    models = " + ".join(str(member.path) for member in translator.members)
    log.info("serving %s on %s (API docs at %s/docs)", models, url, url)
    if page:
        log.info("translation page: open %s/ in a browser", url)
    try:
        server.run(sockets=[listener])
    finally:
        logging.getLogger("uvicorn.error").disabled = False
    if server.force_exit:
        raise Interrupted(signal.SIGINT)
    log.info("stopped (%s): every request was answered", server.stopped_by or "shut down")
