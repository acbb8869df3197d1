"""The HTTP endpoints of the web inspector (:mod:`remd.http.app` mounts them), and the inspector's
static page at ``/ui``.

JSON endpoints (the same bearer token, namespace rule, guard (:mod:`remd.http.guard`) and error
shape as the rest of the API; GETs take ``?namespace=``, and so do the DELETE and the rollback
POST, which take ``Content-Type: application/json`` with an empty body or ``{}``):

- ``GET /v1/namespaces`` ``?limit=`` → the file's namespaces with their memory counts
- ``GET /v1/memories`` ``?limit=&include_inactive=`` → the newest memories
- ``DELETE /v1/memories/{id}`` → forget it (soft delete); the memory as it is now
- ``GET /v1/memories/{id}/links`` → its live typed edges, and the memories at their other ends
- ``POST /v1/inject/explain`` (the body of ``/v1/inject``) → the pack with its explanation
- ``GET /v1/tags`` ``?limit=`` → the most used tags
- ``GET /v1/tags/{tag}/graph`` ``?depth=&max_nodes=`` → the tags around one, and their edges
- ``GET /v1/rem/runs`` ``?limit=`` → the latest REM runs; ``GET /v1/rem/runs/{run_id}`` → what
  one folded into what; ``POST /v1/rem/runs/{run_id}/rollback`` → undo it
- ``GET /v1/triggers`` → the REM triggers evaluated now
- ``GET /ui/auth.json`` (no token) → ``{"token_required": bool}``: whether the API wants a
  token, so the page asks for one only then (a 401 would tell as much)

The page (``/ui``, ``/ui/app.js``, ``dom.js``, ``graph.js``, ``app.css`` and the vendored layout
library under ``/ui/vendor/``) is a static shell that carries no data, so it is served without
the token; the page sends the token with every API call when it has one, and asks for one only
when ``/ui/auth.json`` says the API wants one (or a call is refused with 401). Its Content
Security Policy lets it load only its own files and talk only to this server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict
from importlib import resources
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from remd.errors import NotFound
from remd.http.models import EmptyIn, InjectIn, MemoryOut
from remd.http.params import flag_param, int_param
from remd.memory import Memory
from remd.models import Node
from remd.query.pack import Pack, explain
from remd.query.taggraph import MAX_NODES
from remd.wire import iso, node_to_dict

__all__ = ["Inspector", "inspector_routes"]

Handler = Callable[[Request], Awaitable[Response]]
Call = Callable[[str, Callable[[Memory], Any]], Awaitable[Any]]
NamespaceOf = Callable[[Request], str]
BodyOf = Callable[[Request, type[BaseModel]], Awaitable[Any]]
TokenRequired = Callable[[], bool]

MAX_RELATED = 200  # memories at the other end of a memory's links, returned with it
_JS = "text/javascript; charset=utf-8"
# The page's files, by their path under /ui/ (and under remd/http/inspector/): the vendored
# layout library is listed in inspector/vendor/NOTICE with its version and license.
_ASSETS = {"index.html": "text/html; charset=utf-8", "app.css": "text/css; charset=utf-8",
           "app.js": _JS, "dom.js": _JS, "graph.js": _JS, "vendor/d3-dispatch.min.js": _JS,
           "vendor/d3-quadtree.min.js": _JS, "vendor/d3-timer.min.js": _JS,
           "vendor/d3-force.min.js": _JS}
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


# The bounds of the integer parameters: the library's (remd.query.namespaces, .taggraph,
# remd.sleep.remhistory), except the newest memories, which the page lists whole.
MAX_NAMESPACES, MAX_RECENT, MAX_TAGS, MAX_RUNS, MAX_DEPTH = 100_000, 1000, 1000, 1000, 3
def _summary(node: Node) -> dict[str, Any]:
    return {"id": node.id, "content": node.content, "kind": node.kind.value,
            "status": node.status.value, "created_at": iso(node.created_at),
            "tags": list(node.tags)}


def _memory(node: Node) -> dict[str, Any]:
    return MemoryOut.model_validate(node_to_dict(node)).model_dump()


def _links(m: Memory, node_id: str) -> dict[str, Any]:
    links = m.links(node_id)
    related: dict[str, Any] = {}
    for edge in links:
        other = edge.dst if edge.src == node_id else edge.src
        if other not in related and len(related) < MAX_RELATED:
            try:
                related[other] = _summary(m.get(other))
            except NotFound:  # an edge may dangle (a rolled-back synthesis's id)
                related[other] = None
    return {"id": node_id, "links": [
        {"src": e.src, "dst": e.dst, "type": e.type.value, "weight": round(e.weight, 6),
         "context": e.context} for e in links], "related": related}


def _explained(pack: Pack) -> dict[str, Any]:
    return {
        **pack.to_dict(), "stop": pack.stop, "stop_detail": pack.stop_detail,
        "seeds": [asdict(s) for s in pack.seeds], "tags_activated": pack.tags_activated,
        "memories_touched": pack.memories_touched,
        "items": [{"id": i.id, "content": i.content, "tokens": i.tokens,
                   "score": round(i.score, 6), "tags": list(i.tags), "kind": i.kind.value,
                   "sources": list(i.sources), "path": list(i.path),
                   "outdated_by": i.outdated_by,
                   "parts": {k: round(v, 6) for k, v in asdict(i.parts).items()}}
                  for i in pack.items],
        "explanation": list(explain(pack)),
    }


def _run(run: Any, why_not: str) -> dict[str, Any]:
    out: dict[str, Any] = run.to_dict()
    out.pop("outcomes", None)
    out.update(started=iso(run.started_at), finished=iso(run.finished_at),
               can_rollback=not why_not, why_not=why_not)
    return out


def _folds(m: Memory, run_id: str) -> dict[str, Any]:
    folds = m.rem_run_folds(run_id)
    return {"run": _run(folds.run, folds.why_not), "tokens_before": folds.tokens_before,
            "tokens_after": folds.tokens_after, "can_rollback": folds.can_rollback,
            "why_not": folds.why_not, "folds": [asdict(f) for f in folds.folds]}


class Inspector:
    """The inspector's handlers over the API's plumbing: ``call`` runs a function of a
    namespace's :class:`Memory` on a worker thread, ``namespace_of`` reads ``?namespace=``,
    ``body_of`` reads a JSON body into a model, ``token_required`` says whether the API wants
    a token now (it can be set at run time)."""

    def __init__(self, call: Call, namespace_of: NamespaceOf, body_of: BodyOf,
                 token_required: TokenRequired) -> None:
        self.call, self.namespace_of, self.body_of = call, namespace_of, body_of
        self.token_required = token_required
        root = resources.files("remd.http") / "inspector"
        self.assets = {name: root.joinpath(*name.split("/")).read_bytes() for name in _ASSETS}

    async def _json(self, request: Request, fn: Callable[[Memory], Any]) -> Response:
        return JSONResponse(await self.call(self.namespace_of(request), fn))

    async def namespaces(self, request: Request) -> Response:
        limit = int_param(request, "limit", 1000, 0, MAX_NAMESPACES)
        return await self._json(request, lambda m: [asdict(n) for n in m.namespaces(limit)])

    async def recent(self, request: Request) -> Response:
        n = int_param(request, "limit", 20, 0, MAX_RECENT)
        inactive = flag_param(request, "include_inactive")
        return await self._json(request, lambda m: [
            _memory(node) for node in m.recent(n, include_inactive=inactive)])

    async def forget(self, request: Request) -> Response:
        node_id = request.path_params["node_id"]
        await self.body_of(request, EmptyIn)
        return await self._json(request, lambda m: _memory(m.forget(node_id)))

    async def links(self, request: Request) -> Response:
        node_id = request.path_params["node_id"]
        return await self._json(request, lambda m: _links(m, node_id))

    async def explain(self, request: Request) -> Response:
        body: InjectIn = await self.body_of(request, InjectIn)
        namespace = self.namespace_of(request) if body.namespace is None else body.namespace
        data = await self.call(namespace, lambda m: _explained(
            m.inject(body.query, body.token_budget, fill=body.fill, dated=body.dated)))
        return JSONResponse(data)

    async def tags(self, request: Request) -> Response:
        limit = int_param(request, "limit", 50, 0, MAX_TAGS)
        return await self._json(request, lambda m: [
            {"tag": t, "memories": df} for t, df in m.top_tags(limit)])

    async def tag_graph(self, request: Request) -> Response:
        tag = request.path_params["tag"]
        depth = int_param(request, "depth", 2, 1, MAX_DEPTH)
        size = int_param(request, "max_nodes", 40, 1, MAX_NODES)

        def graph(m: Memory) -> dict[str, Any]:
            g = m.tag_neighbourhood(tag, depth=depth, max_nodes=size)
            return {"tag": g.tag,
                    "nodes": [{"tag": t, "memories": df, "hops": h} for t, df, h in g.nodes],
                    "edges": [{"a": a, "b": b, "weight": w, "count": c}
                              for a, b, w, c in g.edges],
                    "subtypes": [{"child": c, "parent": p} for c, p in g.subtypes]}

        return await self._json(request, graph)

    async def runs(self, request: Request) -> Response:
        limit = int_param(request, "limit", 50, 0, MAX_RUNS)
        return await self._json(request, lambda m: [
            _run(run, why) for run, why in m.rem_runs(limit)])

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        return await self._json(request, lambda m: _folds(m, run_id))

    async def rollback(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await self.body_of(request, EmptyIn)
        return await self._json(request, lambda m: asdict(m.rollback(run_id)))

    async def triggers(self, request: Request) -> Response:
        return await self._json(request, lambda m: m.triggers().to_dict())

    async def auth(self, request: Request) -> Response:
        return JSONResponse({"token_required": self.token_required()},
                            headers={**_PAGE_HEADERS, "Cache-Control": "no-store"})

    async def page(self, request: Request) -> Response:
        name = request.path_params.get("asset", "index.html") or "index.html"
        if name not in _ASSETS:
            raise NotFound("inspector file", name[:80])
        return Response(self.assets[name], media_type=_ASSETS[name], headers=_PAGE_HEADERS)


def inspector_routes(ins: Inspector, wrap: Callable[..., Handler]) -> list[Route]:
    """The inspector's routes, each handler wrapped by the API's ``endpoint`` (token, errors,
    request log); the static page is wrapped with ``auth=False``."""
    return [
        Route("/v1/namespaces", wrap(ins.namespaces), methods=["GET"]),
        Route("/v1/memories", wrap(ins.recent), methods=["GET"]),
        Route("/v1/memories/{node_id}", wrap(ins.forget), methods=["DELETE"]),
        Route("/v1/memories/{node_id}/links", wrap(ins.links), methods=["GET"]),
        Route("/v1/inject/explain", wrap(ins.explain), methods=["POST"]),
        Route("/v1/tags", wrap(ins.tags), methods=["GET"]),
        Route("/v1/tags/{tag}/graph", wrap(ins.tag_graph), methods=["GET"]),
        Route("/v1/rem/runs", wrap(ins.runs), methods=["GET"]),
        Route("/v1/rem/runs/{run_id}", wrap(ins.run), methods=["GET"]),
        Route("/v1/rem/runs/{run_id}/rollback", wrap(ins.rollback), methods=["POST"]),
        Route("/v1/triggers", wrap(ins.triggers), methods=["GET"]),
        Route("/ui", wrap(ins.page, auth=False), methods=["GET"]),
        Route("/ui/auth.json", wrap(ins.auth, auth=False), methods=["GET"]),
        Route("/ui/{asset:path}", wrap(ins.page, auth=False), methods=["GET"]),
    ]
