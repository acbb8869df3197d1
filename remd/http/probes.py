"""What the HTTP API answers to the people and machines that watch it: ``GET /metrics``,
``GET /livez`` and ``GET /readyz`` (wired into the app by :func:`remd.http.app.create_app`).

- ``/metrics``: the Prometheus text format (:mod:`remd.http.metrics`), behind the same bearer token
  as the rest of the API (Prometheus sends one with ``authorization: credentials_file``).
- ``/livez``: 200 whenever the process answers at all; never touches the database, never
  needs the token (a liveness probe that fails on a locked file would restart a process
  that is merely busy).
- ``/readyz``: like ``/healthz``, no token. 200 when the database answers with the current
  schema, a save would be written (remd.readiness.check_writable), the embedding backlog is
  at most ``daemon.ready_max_backlog`` and the server is not draining; otherwise 503, with
  every check's result in the body either way.

Draining: on SIGTERM the daemon calls :meth:`Probes.drain` before the HTTP server stops, so
``/readyz`` answers 503 for the drain window (``daemon.drain_seconds``) while requests go on
being served.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from remd.hosting import EngineHost
from remd.http.metrics import Metrics
from remd.readiness import Check, readiness


class Probes:
    """The handlers of ``/metrics``, ``/livez`` and ``/readyz`` over one engine host."""

    def __init__(self, host: EngineHost) -> None:
        self.host = host
        self.exporter = Metrics(lambda: host.engine)
        self.started = time.monotonic()
        self._draining = False

    @property
    def draining(self) -> bool:
        return self._draining

    def drain(self) -> None:
        """From now on ``/readyz`` answers 503 (a plain assignment: safe from any thread)."""
        self._draining = True

    async def metrics(self, request: Request) -> Response:
        body, content_type = await run_in_threadpool(
            self.exporter.render, request.headers.get("accept", ""))
        return Response(body, media_type=content_type)

    async def livez(self, request: Request) -> Response:
        return JSONResponse({"status": "alive",
                             "uptime_seconds": round(time.monotonic() - self.started, 3)})

    async def readyz(self, request: Request) -> Response:
        def work() -> dict[str, Check]:
            with self.host.lease() as engine:
                return readiness(engine, engine.config.daemon.ready_max_backlog)

        checks = await run_in_threadpool(work)
        checks["draining"] = Check(ok=not self._draining)
        ready = all(c.ok for c in checks.values())
        body: dict[str, Any] = {"status": "ready" if ready else "unready",
                                "checks": {k: c.to_dict() for k, c in checks.items()}}
        return JSONResponse(body, status_code=200 if ready else 503,
                            headers=None if ready else {"Retry-After": "1"})
