"""The Schema Registry's REST API (v1), as Confluent's clients call it: schemas by id, subjects and their
versions, register and look up, soft and hard deletes, compatibility checks, config and mode.  Handlers
are thin: they read the request, call the state (mockbroker.registry.state) under the registry's lock,
write what changed to ``_schemas`` and answer; every refusal is a RegistryError, answered in Confluent's
body by the middleware in mockbroker.registry.server."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from mockbroker.registry import errors as E
from mockbroker.registry.compatibility import KIND_MODULES, kind_module
from mockbroker.registry.errors import RegistryError
from mockbroker.registry.state import Change, RegistryState, Version

if TYPE_CHECKING:
    from mockbroker.registry.server import SchemaRegistry

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
REGISTRY: web.AppKey[Any] = web.AppKey("registry")  # the app's SchemaRegistry


def answer(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=CONTENT_TYPE)


def _registry(request: web.Request) -> SchemaRegistry:
    registry: SchemaRegistry = request.app[REGISTRY]
    return registry


def _state(request: web.Request) -> RegistryState:
    return _registry(request).state


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").strip().lower() == "true"


def _id(request: web.Request) -> int:
    text = request.match_info["id"]
    if not text.lstrip("-").isdigit():
        raise RegistryError(E.SCHEMA_NOT_FOUND, f"Schema {text} not found")
    return int(text)


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.text() or "{}")
    except json.JSONDecodeError as error:
        raise web.HTTPBadRequest(text=json.dumps({"error_code": 400, "message": f"Invalid JSON body: {error}"}),
                                 content_type=CONTENT_TYPE) from None
    if not isinstance(body, dict):
        raise RegistryError(422, "The request body must be a JSON object")
    return body


async def _commit(request: web.Request, change: Change) -> Any:
    await _registry(request).store.write(change.records)
    return change.apply()


def _schema_body(state: RegistryState, schema_id: int, fmt: str | None) -> dict[str, Any]:
    stored = state.schema(schema_id)
    body = stored.body()
    if fmt == "serialized" and stored.parsed.kind == "PROTOBUF":
        body["schema"] = kind_module("PROTOBUF").serialized(stored.parsed)
    return body


# -- schemas -------------------------------------------------------------------------------------------
async def root(request: web.Request) -> web.Response:
    return answer({})


async def schema_types(request: web.Request) -> web.Response:
    return answer(sorted(KIND_MODULES))


async def schema_by_id(request: web.Request) -> web.Response:
    state = _state(request)
    body = _schema_body(state, _id(request), request.query.get("format"))
    stored = state.schema(_id(request))
    return answer({**body, "id": stored.schema_id, "guid": stored.guid})


async def schema_by_guid(request: web.Request) -> web.Response:
    state, guid = _state(request), request.match_info["guid"]
    for stored in state.schemas.values():
        if stored.guid == guid:
            return answer({**_schema_body(state, stored.schema_id, request.query.get("format")),
                           "id": stored.schema_id, "guid": guid})
    raise RegistryError(E.SCHEMA_NOT_FOUND, f"Schema {guid} not found")


async def raw_schema_by_id(request: web.Request) -> web.Response:
    return web.Response(text=_state(request).schema(_id(request)).parsed.canonical, content_type=CONTENT_TYPE)


async def subjects_of_id(request: web.Request) -> web.Response:
    state = _state(request)
    state.schema(_id(request))
    return answer(sorted({v.subject for v in state.uses_of(_id(request), _flag(request, "deleted"))}))


async def versions_of_id(request: web.Request) -> web.Response:
    state = _state(request)
    state.schema(_id(request))
    return answer([{"subject": v.subject, "version": v.version}
                   for v in state.uses_of(_id(request), _flag(request, "deleted"))])


# -- subjects ------------------------------------------------------------------------------------------
async def subjects(request: web.Request) -> web.Response:
    return answer(_state(request).subject_names(_flag(request, "deleted"), request.query.get("subjectPrefix", "")))


async def versions(request: web.Request) -> web.Response:
    found = _state(request).versions(request.match_info["subject"], _flag(request, "deleted"))
    return answer([v.version for v in found])


def _version(request: web.Request) -> Version:
    return _state(request).version(request.match_info["subject"], request.match_info["version"],
                                   _flag(request, "deleted"))


async def version(request: web.Request) -> web.Response:
    v = _version(request)
    state = _state(request)
    return answer({"subject": v.subject, "version": v.version, "id": v.schema_id, "guid": state.schema(
        v.schema_id).guid, **_schema_body(state, v.schema_id, request.query.get("format"))})


async def raw_version(request: web.Request) -> web.Response:
    v = _version(request)
    return web.Response(text=_state(request).schema(v.schema_id).parsed.canonical, content_type=CONTENT_TYPE)


async def referenced_by(request: web.Request) -> web.Response:
    v = _version(request)
    return answer(_state(request).referenced_by(v.subject, v.version))


async def register(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    body = await _body(request)
    async with _registry(request).lock:
        state = _state(request)
        change = state.plan_register(subject, str(body.get("schemaType") or "AVRO").upper(), body.get("schema"),
                                     body.get("references") or [], body.get("id"), body.get("version"))
        schema_id = await _commit(request, change)
    return answer({"id": schema_id})


async def lookup(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    body = await _body(request)
    state = _state(request)
    found = state.versions(subject, _flag(request, "deleted"))
    parsed = state.parse(str(body.get("schemaType") or "AVRO").upper(), body.get("schema"),
                         body.get("references") or [])
    references = body.get("references") or []
    for v in reversed(found):
        stored = state.schemas[v.schema_id]
        if stored.parsed == parsed and stored.references == references:
            return answer({"subject": subject, "version": v.version, "id": v.schema_id, "guid": stored.guid,
                           **_schema_body(state, v.schema_id, request.query.get("format"))})
    raise RegistryError(E.SCHEMA_NOT_FOUND, "Schema not found")


async def delete_subject(request: web.Request) -> web.Response:
    async with _registry(request).lock:
        change = _state(request).plan_delete_subject(request.match_info["subject"], _flag(request, "permanent"))
        return answer(await _commit(request, change))


async def delete_version(request: web.Request) -> web.Response:
    async with _registry(request).lock:
        change = _state(request).plan_delete_version(request.match_info["subject"], request.match_info["version"],
                                                     _flag(request, "permanent"))
        return answer(await _commit(request, change))


# -- compatibility -------------------------------------------------------------------------------------
async def compatibility(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    body = await _body(request)
    state = _state(request)
    parsed = state.parse(str(body.get("schemaType") or "AVRO").upper(), body.get("schema"),
                         body.get("references") or [])
    if "version" in request.match_info:
        try:
            against = [state.version(subject, request.match_info["version"])]
        except RegistryError as error:
            if error.code != E.SUBJECT_NOT_FOUND:
                raise
            against = []
        level = state.levels.of(subject).removesuffix("_TRANSITIVE")  # one version: the level's direction
    else:
        against = [v for v in state.subjects.get(subject, []) if not v.deleted]
        level = None
    problems = state.check(subject, parsed, against, level)
    out: dict[str, Any] = {"is_compatible": not problems}
    if _flag(request, "verbose"):
        out["messages"] = problems
    return answer(out)


# -- config and mode -----------------------------------------------------------------------------------
def _subject(request: web.Request) -> str | None:
    return request.match_info.get("subject")


async def get_config(request: web.Request) -> web.Response:
    level = _state(request).levels.configured(_subject(request), _flag(request, "defaultToGlobal"))
    return answer({"compatibilityLevel": level})


async def put_config(request: web.Request) -> web.Response:
    body = await _body(request)
    async with _registry(request).lock:
        level = await _commit(request, _state(request).plan_level(_subject(request), body.get("compatibility")))
    return answer({"compatibility": level})


async def delete_config(request: web.Request) -> web.Response:
    async with _registry(request).lock:
        level = await _commit(request, _state(request).levels.plan_forget(_subject(request)))
    return answer({"compatibilityLevel": level})


async def get_mode(request: web.Request) -> web.Response:
    mode = _state(request).modes.configured(_subject(request), _flag(request, "defaultToGlobal"))
    return answer({"mode": mode})


async def put_mode(request: web.Request) -> web.Response:
    body = await _body(request)
    async with _registry(request).lock:
        mode = await _commit(request, _state(request).plan_mode(_subject(request), body.get("mode"),
                                                                _flag(request, "force")))
    return answer({"mode": mode})


async def delete_mode(request: web.Request) -> web.Response:
    async with _registry(request).lock:
        mode = await _commit(request, _state(request).modes.plan_forget(request.match_info["subject"]))
    return answer({"mode": mode})


async def contexts(request: web.Request) -> web.Response:
    return answer(["."])


def add_routes(app: web.Application) -> None:
    s, v = "/subjects/{subject}", "/subjects/{subject}/versions/{version}"
    app.router.add_get("/", root)
    app.router.add_get("/schemas/types", schema_types)
    app.router.add_get("/schemas/ids/{id}", schema_by_id)
    app.router.add_get("/schemas/guids/{guid}", schema_by_guid)
    app.router.add_get("/schemas/ids/{id}/schema", raw_schema_by_id)
    app.router.add_get("/schemas/ids/{id}/subjects", subjects_of_id)
    app.router.add_get("/schemas/ids/{id}/versions", versions_of_id)
    app.router.add_get("/subjects", subjects)
    app.router.add_get(s + "/versions", versions)
    app.router.add_post(s + "/versions", register)
    app.router.add_get(v, version)
    app.router.add_get(v + "/schema", raw_version)
    app.router.add_get(v + "/referencedby", referenced_by)
    app.router.add_delete(v, delete_version)
    app.router.add_post(s, lookup)
    app.router.add_delete(s, delete_subject)
    app.router.add_post("/compatibility" + v, compatibility)
    app.router.add_post("/compatibility" + s + "/versions", compatibility)
    for prefix in ("/config", "/config/{subject}"):
        app.router.add_get(prefix, get_config)
        app.router.add_put(prefix, put_config)
        app.router.add_delete(prefix, delete_config)
    for prefix in ("/mode", "/mode/{subject}"):
        app.router.add_get(prefix, get_mode)
        app.router.add_put(prefix, put_mode)
    app.router.add_delete("/mode/{subject}", delete_mode)
    app.router.add_get("/contexts", contexts)
