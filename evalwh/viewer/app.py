"""The viewer's routes: each page as HTML (server-rendered Jinja2, autoescaped) and as a
``.json`` twin of the same data; the live tail; the writes (labels, baselines).

Pages are rendered from :mod:`evalwh.viewer.pages` and the report's own functions
(``reports.html.run_data``, ``compare_data``), with the report's templates: the viewer's
``templates/`` folder comes first and its ``base.html.j2`` frames the report's run and
compare templates. Every request passes :class:`~evalwh.viewer.security.Guard` first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

from evalwh.errors import EvalwhError, RunNotFoundError, UsageError
from evalwh.reports.html import COMPARE_PARTS, cases_data, criteria_data, slices_data
from evalwh.reports.html import TEMPLATES as REPORT_TEMPLATES
from evalwh.viewer import pages
from evalwh.viewer.attachments import image
from evalwh.viewer.limits import BodyLimit, Limits
from evalwh.viewer.live import RECENT, RETRY_AFTER_S, Hub, warehouse_poll
from evalwh.viewer.security import HEADER, Guard
from evalwh.warehouse.artifacts import ArtifactStore

if TYPE_CHECKING:
    import jinja2

    from evalwh.api.view import WarehouseView

HERE = Path(__file__).resolve().parent
STATIC = {  # name -> (file, media type): the only files served
    "htmx.min.js": (HERE / "static" / "htmx.min.js", "text/javascript"),
    "viewer.js": (HERE / "static" / "viewer.js", "text/javascript"),
    "viewer.css": (HERE / "static" / "viewer.css", "text/css"),
    "report.js": (REPORT_TEMPLATES / "report.js", "text/javascript"),
    "report.css": (REPORT_TEMPLATES / "report.css", "text/css"),
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# The run page's sections that load in a request of their own after the page (each a named
# query or a few over one run: on a 10M-row warehouse each stays well under a second)
SECTIONS: dict[str, Callable[[Any, str], dict[str, Any]]] = {
    "criteria": criteria_data,
    "slices": slices_data,
    "cases": lambda store, run_id: cases_data(store, run_id, max_rows=VIEW_ROWS),
}
VIEW_ROWS = 1000  # case rows a run page lists (failures first); the page counts the rest


@cache
def _env() -> jinja2.Environment:
    import jinja2

    from evalwh.reports.html import _env as report_env

    loader = jinja2.ChoiceLoader(
        [jinja2.FileSystemLoader(HERE / "templates"), jinja2.FileSystemLoader(REPORT_TEMPLATES)]
    )
    from evalwh.viewer.frame import SHORTCUTS

    env: jinja2.Environment = report_env().overlay(loader=loader, autoescape=True)
    # a dict of its own: an overlay shares its parent's, and the report must not get these
    env.globals = {
        **env.globals,
        "shortcuts": SHORTCUTS,
        "case_url": "/cases/",  # a case's history: the compare page's tool cells link there
    }
    return env


def render(template: str, **context: Any) -> str:
    context.setdefault("page_data", {})
    return _env().get_template(template).render(**context)


def _dumps(data: Any) -> str:
    from evalwh.reports.html import _encode

    return json.dumps(data, default=_encode, ensure_ascii=False)


def json_response(data: Any, status: int = 200) -> Response:
    return Response(_dumps(data), status_code=status, media_type="application/json")


def html_response(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type="text/html; charset=utf-8")


def page(request: Request, as_json: bool, template: str, data: Any, **context: Any) -> Response:
    """A page or its ``.json`` twin, from the same data."""
    if as_json:
        return json_response(data)
    return html_response(render(template, d=data, **context))


async def _form(request: Request) -> dict[str, str]:
    """A write's fields, from JSON or a urlencoded form (bounded by :class:`BodyLimit`)."""
    body = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            raise UsageError("the request body is not JSON") from None
        if not isinstance(data, dict):
            raise UsageError("the request body must be a JSON object")
        return {str(k): str(v) for k, v in data.items() if v is not None}
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def create_app(
    view: WarehouseView,
    guard: Guard,
    *,
    labeller: str = "unknown",
    limits: Limits | None = None,
    hub: Hub | None = None,
) -> FastAPI:
    """The viewer over ``view``'s warehouse; ``labeller`` names who labels when the page
    does not say; ``hub`` feeds the live tail (a test gives one with its own poll)."""
    store = view.store
    limits = limits or Limits()
    hub = hub or Hub(warehouse_poll(store), per_run=limits.sse_per_run)
    app = FastAPI(title="evalwh", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def guard_every_request(request: Request, call_next: Any) -> Response:
        headers = request.headers
        if not guard.host_allowed(headers.get("host")):
            return Response("this server answers to 127.0.0.1 only", status_code=400)
        given = request.query_params.get("token")
        if given is not None:
            if not guard.token_ok(given):
                return Response("wrong token", status_code=403)
            rest = {k: v for k, v in request.query_params.items() if k != "token"}
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(guard.cookie, given, httponly=True, samesite="strict")
            return response
        has_token = guard.token_ok(request.cookies.get(guard.cookie)) or guard.token_ok(
            headers.get(HEADER)
        )
        if guard.reads_need_token and not has_token:
            return Response(
                "open the URL with ?token=... that `evalwh serve` printed", status_code=401
            )
        if request.method not in ("GET", "HEAD"):
            if not has_token:
                return Response(
                    "a write needs the token: open the URL `evalwh serve` printed",
                    status_code=403,
                )
            if not guard.same_origin(
                headers.get("origin"), headers.get("referer"), headers.get("host")
            ):
                return Response("a write must come from this server's own pages", status_code=403)
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    # added last, so outermost: a body over the limit is refused before the guard's checks
    app.add_middleware(BodyLimit, max_body=limits.max_body, timeout_s=limits.body_timeout_s)

    @app.exception_handler(EvalwhError)
    async def clear_error(request: Request, exc: EvalwhError) -> Response:
        status = 404 if isinstance(exc, RunNotFoundError) else 400
        if request.url.path.endswith(".json") or request.method != "GET":
            return json_response({"error": str(exc)}, status)
        return html_response(render("error.html.j2", status=status, message=str(exc)), status)

    def resolve(ref: str) -> str:
        return store.resolve(ref)

    def twin(path: str, build: Callable[[Request, bool], Response]) -> None:
        """``path`` as a page and ``path.json`` as its data (the JSON route first, so a
        run id with dots still ends at the right one)."""
        app.add_route(path + ".json", lambda request: build(request, True), methods=["GET"])
        app.add_route(path, lambda request: build(request, False), methods=["GET"])

    # -- static files ----------------------------------------------------------------------
    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC:
            return Response("not found", status_code=404)
        path, media = STATIC[name]
        return Response(
            path.read_bytes(), media_type=media, headers={"Cache-Control": "max-age=3600"}
        )

    # -- attachments: images from the artifact store, by hash only -------------------------
    artifacts = ArtifactStore(view.local_dir)

    @app.get(pages.ARTIFACT_URL + "{sha256}")
    def artifact(sha256: str) -> Response:
        found = image(artifacts, sha256)
        if found is None:
            return Response("not found", status_code=404)
        data, media = found
        return Response(data, media_type=media, headers={"Cache-Control": "max-age=3600"})

    # -- runs ------------------------------------------------------------------------------
    def runs(request: Request, as_json: bool) -> Response:
        q = request.query_params
        with store.reading():
            data = pages.runs_page(
                store,
                suite=q.get("suite"),
                label=q.get("label"),
                status=q.get("status"),
                since=q.get("since"),
                until=q.get("until"),
            )
        query = "?" + urlencode({k: v for k, v in data["filters"].items() if v}) if q else ""
        return page(
            request,
            as_json,
            "runs.html.j2",
            data,
            runs=data["runs"],
            f=data["filters"],
            statuses=data["statuses"],
            query=query.rstrip("?"),
        )

    twin("/runs", runs)
    app.add_route("/", lambda request: runs(request, False), methods=["GET"])

    def run_page(request: Request, as_json: bool) -> Response:
        from evalwh.reports.html import run_data, script_data

        with store.reading():
            run_id = resolve(request.path_params["ref"])
            data = run_data(store, run_id, max_rows=VIEW_ROWS, parts=frozenset())
            live = None
            if data["run"]["status"] in pages.LIVE:
                live = {
                    **pages.progress(store, run_id),
                    "events": f"/runs/{run_id}/events",
                    "keep": RECENT,
                }
        data["sections"] = {name: f"/runs/{run_id}/sections/{name}" for name in SECTIONS}
        if as_json:
            return json_response(data)
        base = f"/runs/{run_id}"
        return html_response(
            render(
                "run.html.j2",
                d=data,
                page_data={
                    **script_data(data),
                    "label_url": f"{base}/labels",
                    "rows_url": data["sections"]["cases"] + ".json",
                },
                nojs_rows=[],
                live=live,
                links=[
                    ("Slices", f"{base}/slices"),
                    ("Calibration", f"{base}/calibration"),
                    ("JSON", f"{base}.json"),
                ],
            )
        )

    twin("/runs/{ref}", run_page)

    def section(request: Request, as_json: bool) -> Response:
        """A run page section loaded by its own request (htmx, ``hx-trigger="load"``)."""
        name = request.path_params["name"]
        if name not in SECTIONS:
            return Response("not found", status_code=404)
        with store.reading():
            data = SECTIONS[name](store, resolve(request.path_params["ref"]))
        return page(request, as_json, f"section_{name}.html.j2", data)

    twin("/runs/{ref}/sections/{name}", section)

    @app.get("/runs/{ref}/progress.json")
    def run_progress(ref: str) -> Response:
        with store.reading():
            return json_response(pages.progress(store, resolve(ref)))

    @app.get("/runs/{ref}/events")
    async def run_events(request: Request, ref: str) -> Response:
        import anyio

        run_id = await anyio.to_thread.run_sync(resolve, ref)
        subscriber = hub.subscribe(run_id)
        if subscriber is None:
            return Response(
                f"this run has {hub.per_run} live-tail subscribers already: retry later",
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        return StreamingResponse(
            hub.stream(run_id, subscriber),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    # -- slices and calibration of a run ---------------------------------------------------
    def slices(request: Request, as_json: bool) -> Response:
        q = request.query_params
        with store.reading():
            data = pages.slices_page(
                store,
                resolve(request.path_params["ref"]),
                q.get("by") or None,
                q.get("criterion") or None,
            )
        links = [("Run", f"/runs/{data['run_id']}")]
        return page(request, as_json, "slices.html.j2", data, links=links)

    twin("/runs/{ref}/slices", slices)

    def calibration(request: Request, as_json: bool) -> Response:
        with store.reading():
            data = pages.calibration_page(store, resolve(request.path_params["ref"]))
        links = [("Run", f"/runs/{data['run_id']}")]
        return page(request, as_json, "calibration.html.j2", data, links=links)

    twin("/runs/{ref}/calibration", calibration)

    @app.post("/runs/{ref}/labels")
    async def label(request: Request, ref: str) -> Response:
        import anyio

        from evalwh.reports.labels import store_label, store_point_label

        form = await _form(request)
        run_id = resolve(ref)
        who = form.get("who") or labeller
        if "label" in form:  # the Label answers tab: one judged answer
            result = await anyio.to_thread.run_sync(
                lambda: store_point_label(store, run_id, form, who)
            )
            return json_response(result)
        result = await anyio.to_thread.run_sync(
            lambda: store_label(
                store,
                run_id,
                form.get("comparison", ""),
                form.get("case", ""),
                form.get("prefer", ""),
                who,
            )
        )
        return json_response(result)

    # -- compare ---------------------------------------------------------------------------
    @app.get("/compare")
    def compare_pick(request: Request) -> Response:
        a, b = request.query_params.get("a"), request.query_params.get("b")
        if not a or not b:
            raise UsageError("pick two runs on the runs list: one as A, one as B")
        return RedirectResponse(f"/compare/{resolve(a)}/{resolve(b)}", status_code=303)

    def compare(request: Request, as_json: bool) -> Response:
        """The run and cell deltas, totals, gate, tool use and decision entry; the criteria,
        slices and movers load by requests of their own (``sections``)."""
        from evalwh.analysis.compare import MOVERS, compare, tool_use
        from evalwh.reports.html import compare_data

        a, b = request.path_params["a"], request.path_params["b"]
        with store.reading():
            cmp = compare(store, a, b, scopes=("run", "cell"), movers=0, tools=False)
            # the cells whose tool use changed, as many as the movers section lists
            runs = cmp.a["run_id"], cmp.b["run_id"]
            cmp.tools, cmp.tool_cells = tool_use(store, *runs, MOVERS, cmp.no_look, cmp.notes)
            data = compare_data(store, cmp, parts=frozenset())
        base = f"/compare/{data['a']['run_id']}/{data['b']['run_id']}"
        data["sections"] = {name: f"{base}/sections/{name}" for name in COMPARE_PARTS}
        links = [("A", f"/runs/{data['a']['run_id']}"), ("B", f"/runs/{data['b']['run_id']}")]
        links.append(("JSON", f"{base}.json"))
        page_data = {"run_id": data["b"]["run_id"]}
        return page(request, as_json, "compare.html.j2", data, page_data=page_data, links=links)

    twin("/compare/{a}/{b}", compare)

    def compare_part(request: Request, as_json: bool) -> Response:
        """A compare page section loaded by its own request (htmx, ``hx-trigger="load"``)."""
        from evalwh.reports.html import compare_section

        name, params = request.path_params["name"], request.path_params
        if name not in COMPARE_PARTS:
            return Response("not found", status_code=404)
        with store.reading():
            data = compare_section(store, params["a"], params["b"], name)
        return page(request, as_json, f"section_compare_{name}.html.j2", data)

    twin("/compare/{a}/{b}/sections/{name}", compare_part)

    # -- a case across runs ----------------------------------------------------------------
    @app.get("/cases")
    def case_pick(request: Request) -> Response:
        case_id = request.query_params.get("id")
        if not case_id:
            raise UsageError("give a case id: /cases/<id>")
        return RedirectResponse(f"/cases/{case_id}", status_code=303)

    @app.get("/cases/{case_id:path}")
    def case(request: Request, case_id: str) -> Response:
        as_json = case_id.endswith(".json")
        with store.reading():
            data = pages.case_history(store, case_id[: -len(".json")] if as_json else case_id)
        return page(request, as_json, "case.html.j2", data)

    # -- baselines -------------------------------------------------------------------------
    def baselines_data() -> dict[str, Any]:
        with store.reading():
            return pages.baselines_page(store)

    twin(
        "/baselines",
        lambda request, as_json: page(request, as_json, "baselines.html.j2", baselines_data()),
    )

    @app.post("/baselines/pin")
    async def pin(request: Request) -> Response:
        import anyio

        form = await _form(request)
        run, name = form.get("run", ""), form.get("name") or "baseline"
        await anyio.to_thread.run_sync(lambda: view.set_baseline(run, name))
        return _after_write(request, "/baselines")

    @app.post("/baselines/unpin")
    async def unpin(request: Request) -> Response:
        import anyio

        form = await _form(request)
        await anyio.to_thread.run_sync(view.remove_baseline, form.get("name", ""))
        return _after_write(request, "/baselines")

    return app


def _after_write(request: Request, target: str) -> Response:
    """After a form write: the page again (303), or its JSON for a script."""
    if request.headers.get("content-type", "").startswith("application/json"):
        return JSONResponse({"ok": True})
    return RedirectResponse(target, status_code=303)
