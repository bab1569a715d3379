"""The HTTP control API (aiohttp): topics and records, faults, cluster actions, the journal, groups, share groups,
client quotas, reset and health, so tests in any language can drive a mock cluster.  ``openapi.yaml`` beside this
file documents every route; ``GET /openapi.yaml`` serves it.

Handlers run on the cluster's event loop, so they read and change state directly.  Errors are JSON
``{"error": "..."}`` (plus ``code`` and ``name`` for Kafka errors) with 400, 403 (a change asked by a page of
another site: its ``Origin``), 404, 405 or 409 (an unknown
route is a JSON 404, a method a route does not take a JSON 405).  With a token,
every route but ``/health`` wants ``Authorization: Bearer <token>`` (or the cookie a console page opened with
``?token=<token>`` sets).  The console (mockbroker.console) adds its ``/ui/`` pages to this application.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from mockbroker.cluster_actions import run_action
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.faults import rule_from_dict
from mockbroker.http_site import HttpSite
from mockbroker.protocol.errors import error_name
from mockbroker.state.ids import uuid_text
from mockbroker.state.inspect import append_records, read_records

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster
    from mockbroker.state.groups import Group

log = logging.getLogger("mockbroker.control")
OPENAPI_PATH = Path(__file__).with_name("openapi.yaml")
CLUSTER_KEY: web.AppKey[MockCluster] = web.AppKey("cluster")
TOKEN_KEY: web.AppKey[str | None] = web.AppKey("token", str)
TOKEN_COOKIE = "mockbroker_token"  # the console's browser sends the token back this way
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_KAFKA_STATUS: dict[int, int] = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 404, ErrorCode.TOPIC_ALREADY_EXISTS: 409,
                 ErrorCode.CORRUPT_MESSAGE: 409}  # a stored batch that does not decode: the state, not the request


def _fail(status: int, message: str, **extra: Any) -> web.HTTPException:
    kinds = {400: web.HTTPBadRequest, 401: web.HTTPUnauthorized, 403: web.HTTPForbidden, 404: web.HTTPNotFound,
             409: web.HTTPConflict}
    return kinds[status](text=json.dumps({"error": message, **extra}), content_type="application/json")


def _cluster(request: web.Request) -> MockCluster:
    return request.app[CLUSTER_KEY]


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _fail(400, "the body is not JSON") from None
    if not isinstance(data, dict):
        raise _fail(400, "the body must be a JSON object")
    return data


def _int(request: web.Request, name: str, default: int | None = None) -> int | None:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise _fail(400, f"{name} must be an integer, not {raw!r}") from None


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def _same_origin(request: web.Request) -> bool:
    """No Origin header (not a browser's cross-site request), or the page came from this server: a web page
    elsewhere cannot make a browser change the cluster (a "simple" cross-site POST needs no preflight)."""
    origin = request.headers.get("Origin")
    return origin is None or origin == f"{request.scheme}://{request.host}"


def _authorized(request: web.Request, token: str) -> bool:
    """The bearer token in the Authorization header, or in the cookie a console page set (``?token=`` once)."""
    header = request.headers.get("Authorization", "")
    return _same(header[7:] if header.startswith("Bearer ") else None, token) or _same(
        request.cookies.get(TOKEN_COOKIE), token)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method not in ("GET", "HEAD", "OPTIONS") and not _same_origin(request):
        raise _fail(403, f"a {request.method} from another site ({request.headers['Origin']}) is refused: the "
                         "console's own pages and clients that send no Origin (curl, test code) may change the cluster")
    token = request.app[TOKEN_KEY]
    from_query = False
    if token and request.path != "/health" and not _authorized(request, token):
        from_query = request.method == "GET" and _same(request.query.get("token"), token)
        if not from_query:  # (the console's first page may carry it: then it is kept as a cookie)
            raise _fail(401, "missing or wrong bearer token")
    try:
        response = await handler(request)
        if from_query and isinstance(response, web.Response):
            response.set_cookie(TOKEN_COOKIE, token or "", httponly=True, samesite="Strict", path="/")
        return response
    except web.HTTPNotFound as exc:  # no such route (aiohttp's own answer is plain text)
        if exc.content_type == "application/json":
            raise
        raise _fail(404, f"no route {request.method} {request.path} (GET /openapi.yaml lists them)") from None
    except web.HTTPMethodNotAllowed as exc:
        allowed = ", ".join(sorted(exc.allowed_methods))
        raise web.HTTPMethodNotAllowed(request.method, exc.allowed_methods, content_type="application/json",
                                       text=json.dumps({"error": f"{request.path} does not take {request.method} "
                                                                 f"(it takes {allowed})"})) from None
    except KafkaError as exc:
        log.info("control %s %s: %s", request.method, request.path, exc.message)
        raise _fail(_KAFKA_STATUS.get(exc.code, 400), exc.message or error_name(exc.code), code=exc.code,
                    name=error_name(exc.code)) from None
    except (ValueError, TypeError, KeyError) as exc:
        log.info("control %s %s: %s", request.method, request.path, exc)
        raise _fail(400, str(exc)) from None


# -- health, cluster, reset -------------------------------------------------------------------------
async def health(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    return web.json_response({"status": "ok", "brokers": len(cluster.state.brokers),
                              "bootstrap_servers": cluster.bootstrap_servers})


async def openapi(request: web.Request) -> web.Response:
    return web.Response(text=OPENAPI_PATH.read_text(), content_type="application/yaml")


async def cluster_info(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    state = cluster.state
    brokers = []
    for server in cluster.brokers:
        brokers.append({"node_id": server.node_id, "host": server.host, "port": server.port, "state": server.status})
    return web.json_response({"cluster_id": state.cluster_id, "controller": state.controller_id, "brokers": brokers,
                              "bootstrap_servers": cluster.bootstrap_servers})


async def actions(request: web.Request) -> web.Response:
    detail = await run_action(_cluster(request), await _body(request))
    return web.json_response({"ok": True, "detail": detail})


async def reset(request: web.Request) -> web.Response:
    await _cluster(request).reset_async()
    return web.Response(status=204)


# -- topics and records -----------------------------------------------------------------------------
def _topic_detail(cluster: MockCluster, name: str) -> dict[str, Any]:
    topic = cluster.state.topic(name)
    return {"name": topic.name, "topic_id": uuid_text(topic.topic_id),
            "config": {k: str(v) for k, v in topic.config.overrides.items()},
            "partitions": [{"partition": p.index, "leader": p.leader, "leader_epoch": p.leader_epoch,
                            "replicas": list(p.replicas), "log_start_offset": p.log_start_offset,
                            "high_watermark": p.high_watermark, "last_stable_offset": p.last_stable_offset}
                           for p in topic.partitions]}


async def list_topics(request: web.Request) -> web.Response:
    topics = _cluster(request).state.topics.values()
    return web.json_response({"topics": [{"name": t.name, "partitions": len(t.partitions)}
                                         for t in sorted(topics, key=lambda t: t.name) if not t.is_internal]})


async def create_topic(request: web.Request) -> web.Response:
    body = await _body(request)
    if not isinstance(body.get("name"), str):
        raise _fail(400, "name (a string) is required")
    cluster = _cluster(request)
    config = {k: str(v) for k, v in (body.get("config") or {}).items()}
    cluster.state.create_topic(body["name"], body.get("partitions"), body.get("replication_factor"), config)
    return web.json_response(_topic_detail(cluster, body["name"]), status=201)


async def get_topic(request: web.Request) -> web.Response:
    return web.json_response(_topic_detail(_cluster(request), request.match_info["name"]))


async def delete_topic(request: web.Request) -> web.Response:
    _cluster(request).state.delete_topic(request.match_info["name"])
    return web.Response(status=204)


async def get_records(request: web.Request) -> web.Response:
    state = _cluster(request).state
    topic = state.topic(request.match_info["name"])
    partition = _int(request, "partition", 0) or 0
    log_ = state.partition(topic.name, partition)
    offset = _int(request, "offset", log_.log_start_offset) or 0
    limit = min(_int(request, "limit", 100) or 0, 10_000)
    return web.json_response({"records": read_records(log_, offset, limit), "high_watermark": log_.high_watermark})


def _bytes(item: dict[str, Any], name: str) -> bytes | None:
    if item.get(f"{name}_b64") is not None:
        return base64.b64decode(item[f"{name}_b64"], validate=True)
    value = item.get(name)
    return None if value is None else str(value).encode()


async def post_records(request: web.Request) -> web.Response:
    state = _cluster(request).state
    topic = state.topic(request.match_info["name"])
    body = await _body(request)
    items = body.get("records")
    if not isinstance(items, list) or not items:
        raise _fail(400, "records (a non-empty list) is required")
    per: dict[int, list[Any]] = {}
    for i, item in enumerate(items):
        partition = int(item.get("partition", i % len(topic.partitions)))
        headers = [(h["key"], _bytes(h, "value")) for h in item.get("headers", [])]
        per.setdefault(partition, []).append((_bytes(item, "key"), _bytes(item, "value"), headers))
    written = []
    for partition, records in per.items():
        log = state.partition(topic.name, partition)
        size_before = log.size_bytes
        base = append_records(log, records, state.clock.now_ms())
        state.memory_cap.added(log, size_before)
        written.append({"partition": partition, "base_offset": base, "count": len(records)})
    return web.json_response({"written": written}, status=201)


# -- client quotas ----------------------------------------------------------------------------------
async def list_quotas(request: web.Request) -> web.Response:
    return web.json_response({"quotas": _cluster(request).quotas()})


async def set_quota(request: web.Request) -> web.Response:
    body = await _body(request)
    entity, values = body.get("entity"), body.get("values")
    if not isinstance(entity, dict) or not isinstance(values, dict):
        raise _fail(400, "give entity (an object of entity type to name) and values (key to number or null)")
    cluster = _cluster(request)
    cluster.state.quotas.alter(entity, list(values.items()))
    return web.json_response({"quotas": cluster.quotas()})


async def clear_quotas(request: web.Request) -> web.Response:
    _cluster(request).state.quotas.clear()
    return web.Response(status=204)


# -- faults -----------------------------------------------------------------------------------------
def _fault_id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise _fail(404, "no such fault") from None


async def list_faults(request: web.Request) -> web.Response:
    return web.json_response({"faults": [r.to_dict() for r in _cluster(request).state.faults.listed()]})


async def add_fault(request: web.Request) -> web.Response:
    rule = _cluster(request).state.faults.add(rule_from_dict(await _body(request)))
    return web.json_response(rule.to_dict(), status=201)


async def get_fault(request: web.Request) -> web.Response:
    rule = _cluster(request).state.faults.get(_fault_id(request))
    if rule is None:
        raise _fail(404, "no such fault")
    return web.json_response(rule.to_dict())


async def delete_fault(request: web.Request) -> web.Response:
    if not _cluster(request).state.faults.remove(_fault_id(request)):
        raise _fail(404, "no such fault")
    return web.Response(status=204)


async def clear_faults(request: web.Request) -> web.Response:
    _cluster(request).state.faults.clear()
    return web.Response(status=204)


async def wait_fault(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    rule_id = _fault_id(request)
    if cluster.state.faults.get(rule_id) is None:
        raise _fail(404, "no such fault")
    body = await _body(request)
    reached = await cluster.wait_for_hits_async(rule_id, int(body.get("hits", 1)),
                                                min(float(body.get("timeout_s", 10)), 300.0))
    rule = cluster.state.faults.get(rule_id)
    return web.json_response({"reached": reached, "fault": rule.to_dict() if rule else None})


# -- journal and groups -----------------------------------------------------------------------------
async def get_journal(request: web.Request) -> web.Response:
    journal = _cluster(request).state.journal
    api = request.query.get("api")
    entries = journal.entries(api=int(api) if api and api.isdigit() else api, client_id=request.query.get("client_id"),
                              broker=_int(request, "broker"), since_seq=_int(request, "since", 0) or 0,
                              errors_only=request.query.get("errors_only") in ("1", "true"))
    limit = _int(request, "limit")
    if limit is not None:
        entries = entries[-limit:] if limit > 0 else []
    if request.query.get("format") == "jsonl":
        return web.Response(text=journal.to_jsonl(entries), content_type="application/x-ndjson")
    return web.json_response({"entries": [e.to_dict() for e in entries]})


async def clear_journal(request: web.Request) -> web.Response:
    _cluster(request).state.journal.clear()
    return web.Response(status=204)


async def list_groups(request: web.Request) -> web.Response:
    groups = _cluster(request).state.groups.groups.values()
    return web.json_response({"groups": [_group(g) for g in sorted(groups, key=lambda g: g.group_id)]})


async def get_group(request: web.Request) -> web.Response:
    group = _cluster(request).state.groups.groups.get(request.match_info["id"])
    if group is None:
        raise _fail(404, "no such group")
    return web.json_response(_group(group))


async def list_share_groups(request: web.Request) -> web.Response:
    state = _cluster(request).state
    if "share" not in state.__dict__:  # share groups not used yet: nothing to make
        return web.json_response({"groups": []})
    share = state.share
    ids = sorted(g.group_id for g in share.groups.listed())
    return web.json_response({"groups": [share.state(group_id) for group_id in ids]})


async def get_share_group(request: web.Request) -> web.Response:
    state = _cluster(request).state
    group_id = request.match_info["id"]
    if "share" not in state.__dict__ or state.share.groups.group(group_id) is None:
        raise _fail(404, "no such share group")
    return web.json_response(state.share.state(group_id))


async def get_telemetry(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    clients = cluster.state.config_admin.client_metrics.telemetry()
    return web.json_response({"receiver": cluster.state.config["mock.telemetry.receiver"],
                              "clients": [clients[k] for k in sorted(clients)]})


async def get_schema_registry(request: web.Request) -> web.Response:
    registry = _cluster(request).schema_registry
    if registry is None:
        raise _fail(404, "this cluster runs no schema registry (mockbroker serve --schema-registry-port 0)")
    return web.json_response({"url": registry.url, "reachable": registry.reachable,
                              "subjects": registry.state.subject_names(),
                              "faults": [fault.to_dict() for fault in registry.faults]})


def _oidc_state(cluster: MockCluster) -> dict[str, Any]:
    provider = cluster.oidc
    if provider is None:
        raise _fail(404, "this cluster runs no OIDC provider (mockbroker serve --oidc-port 0)")
    settings = provider.settings
    if settings.get("clients") is not None:  # secrets are not sent back
        settings["clients"] = sorted(settings["clients"])
    return {"url": provider.url, "token_url": provider.token_url, "jwks_url": provider.jwks_url,
            "settings": settings, "token_requests": provider.token_requests, "tokens_issued": provider.tokens_issued}


async def get_oidc(request: web.Request) -> web.Response:
    return web.json_response(_oidc_state(_cluster(request)))


async def set_oidc(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    _oidc_state(cluster)  # 404 first
    assert cluster.oidc is not None
    try:
        cluster.oidc.set(**await _body(request))
    except ValueError as exc:
        raise _fail(400, str(exc)) from None
    return web.json_response(_oidc_state(cluster))


async def reset_oidc(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    _oidc_state(cluster)
    assert cluster.oidc is not None
    cluster.oidc.reset()
    return web.json_response(_oidc_state(cluster))


def _group(group: Group) -> dict[str, Any]:
    members = list(group.consumer.members) if group.consumer is not None else list(group.members)
    return {"group_id": group.group_id, "type": group.group_type, "state": group.state_name,
            "generation": group.generation, "protocol": group.protocol_name, "members": sorted(members),
            "offsets": [{"topic": t, "partition": p, "offset": o[0]} for (t, p), o in sorted(group.offsets.items())]}


ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", "/health", health), ("GET", "/openapi.yaml", openapi), ("GET", "/cluster", cluster_info),
    ("POST", "/actions", actions), ("POST", "/reset", reset),
    ("GET", "/topics", list_topics), ("POST", "/topics", create_topic), ("GET", "/topics/{name}", get_topic),
    ("DELETE", "/topics/{name}", delete_topic), ("GET", "/topics/{name}/records", get_records),
    ("POST", "/topics/{name}/records", post_records),
    ("GET", "/faults", list_faults), ("POST", "/faults", add_fault), ("DELETE", "/faults", clear_faults),
    ("GET", "/faults/{id}", get_fault), ("DELETE", "/faults/{id}", delete_fault),
    ("POST", "/faults/{id}/wait", wait_fault),
    ("GET", "/journal", get_journal), ("DELETE", "/journal", clear_journal),
    ("GET", "/groups", list_groups), ("GET", "/groups/{id}", get_group),
    ("GET", "/share-groups", list_share_groups), ("GET", "/share-groups/{id}", get_share_group),
    ("GET", "/telemetry", get_telemetry), ("GET", "/schema-registry", get_schema_registry),
    ("GET", "/quotas", list_quotas), ("POST", "/quotas", set_quota), ("DELETE", "/quotas", clear_quotas),
    ("GET", "/oidc", get_oidc), ("POST", "/oidc", set_oidc), ("POST", "/oidc/reset", reset_oidc),
]


def make_app(cluster: MockCluster, token: str | None = None) -> web.Application:
    app = web.Application(middlewares=[_errors])
    app[CLUSTER_KEY] = cluster
    app[TOKEN_KEY] = token
    for method, path, handler in ROUTES:
        app.router.add_route(method, path, handler)
    return app


class ControlServer(HttpSite):
    """The control API on ``host:port`` (loopback by default), on the cluster's loop."""

    def __init__(self, cluster: MockCluster, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
        super().__init__(make_app(cluster, token), host, port)
