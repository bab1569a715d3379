"""The console's routes on the control API's aiohttp application: one path per page under ``/ui/``, its
static files, and the live part of each page (the same path asked with ``X-Console-Part: live``, which the
page's script does while it is open: polling, so a page costs the broker nothing once closed).

Pages are views (mockbroker.console.markup.View) rendered from the cluster's state on the cluster's loop.
Actions (faults, broker down/up, leader moves) are not routes here: the page's script sends them to the control
API's own routes (POST /faults, POST /actions, ...), so the console can do nothing the API cannot.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from mockbroker.console import groups, journal, overview, topics, transactions
from mockbroker.console.layout import page
from mockbroker.console.markup import Links, Query, View, tag
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.protocol.errors import error_name

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster

log = logging.getLogger("mockbroker.console")
STATIC = Path(__file__).with_name("static")
STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
LIVE_HEADER = "X-Console-Part"
LINKS = Links()
# a page about something that is not there: UNKNOWN_TOPIC_OR_PARTITION, GROUP_ID_NOT_FOUND, TRANSACTIONAL_ID_NOT_FOUND
NOT_FOUND_CODES = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND,
                             ErrorCode.TRANSACTIONAL_ID_NOT_FOUND})
ViewFn = Callable[["MockCluster", Links, Query, dict[str, str]], View]


# each page's view, by the name its handler and the navigation use
VIEWS: dict[str, ViewFn] = {
    "overview": lambda c, links, q, m: overview.overview_view(c, links, q),
    "topic": lambda c, links, q, m: topics.topic_view(c, links, m["name"], q),
    "groups": lambda c, links, q, m: groups.groups_view(c, links, q),
    "group": lambda c, links, q, m: groups.group_view(c, links, m["id"], q),
    "transactions": lambda c, links, q, m: transactions.transactions_view(c, links, q),
    "journal": lambda c, links, q, m: journal.journal_view(c, links, q),
    "faults": lambda c, links, q, m: overview.faults_view(c, links, q),
}


def _problem(status: int, title: str, message: str) -> View:
    return View(title, tag("p", message, class_="problem"), status=status)


def _render(name: str, cluster: MockCluster, request: web.Request) -> View:
    try:
        return VIEWS[name](cluster, LINKS, request.query, dict(request.match_info))
    except KafkaError as exc:
        status = 404 if exc.code in NOT_FOUND_CODES else 400
        return _problem(status, error_name(exc.code), exc.message or error_name(exc.code))
    except KeyError as exc:
        return _problem(400, "bad request", str(exc.args[0]) if exc.args else "bad request")
    except ValueError as exc:
        return _problem(400, "bad request", str(exc))


def _handler(name: str, cluster_of: Callable[[web.Request], MockCluster]
             ) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        view = _render(name, cluster_of(request), request)
        if request.headers.get(LIVE_HEADER) == "live":
            return web.Response(text=view.live, content_type="text/html", status=view.status,
                                headers={"Cache-Control": "no-store"})
        return web.Response(text=page(view, LINKS, active=name), content_type="text/html", status=view.status,
                            headers={"Cache-Control": "no-store"})

    return handle


async def _static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["file"]
    path = STATIC / name
    if "/" in name or name.startswith(".") or path.suffix not in STATIC_TYPES or not path.is_file():
        return _missing(request)
    return web.Response(body=path.read_bytes(), content_type=STATIC_TYPES[path.suffix],
                        headers={"Cache-Control": "max-age=60"})


def _missing(request: web.Request) -> web.Response:
    view = _problem(404, "not found", f"no console page {request.path}")
    body = page(view, LINKS, active="")
    return web.Response(text=body, content_type="text/html", status=404)


async def _missing_route(request: web.Request) -> web.Response:
    return _missing(request)


async def _to_overview(request: web.Request) -> web.Response:
    raise web.HTTPFound("/ui/")


def add_console_routes(app: web.Application, cluster_of: Callable[[web.Request], MockCluster]) -> None:
    """The console's pages on ``app`` (the control API's), each reading the cluster through ``cluster_of``."""
    add = app.router.add_get
    add("/ui", _to_overview)
    add("/ui/", _handler("overview", cluster_of))
    add("/ui/topics/{name}", _handler("topic", cluster_of))
    add("/ui/groups", _handler("groups", cluster_of))
    add("/ui/groups/{id}", _handler("group", cluster_of))
    add("/ui/transactions", _handler("transactions", cluster_of))
    add("/ui/journal", _handler("journal", cluster_of))
    add("/ui/faults", _handler("faults", cluster_of))
    add("/ui/static/{file}", _static)
    add("/ui/{tail:.*}", _missing_route)

