"""Checking HTTP answers against mockbroker/control/openapi.yaml: the operation for a method and path, the
documented status codes, and the body against the documented schema (JSON Schema 2020-12)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jsonschema
import yaml

from mockbroker.control.app import OPENAPI_PATH


@cache
def document() -> dict[str, Any]:
    return yaml.safe_load(OPENAPI_PATH.read_text())


def operations() -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in document()["paths"].items() for method in item
            if method in ("get", "post", "put", "delete", "patch")}


def _template_for(path: str) -> str:
    for template in document()["paths"]:
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path):
            return template
    raise AssertionError(f"{path} is not documented")


@dataclass
class Answer:
    status: int
    content_type: str
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


@dataclass
class Client:
    base: str
    token: str | None = None
    seen: set[tuple[str, str]] = field(default_factory=set)

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> Answer:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                answer = Answer(reply.status, reply.headers.get_content_type(), reply.read().decode())
        except urllib.error.HTTPError as exc:
            answer = Answer(exc.code, exc.headers.get_content_type(), exc.read().decode())
        self.check(method, path.split("?")[0], answer)
        return answer

    def check(self, method: str, path: str, answer: Answer) -> None:
        template = _template_for(path)
        operation = document()["paths"][template].get(method.lower())
        assert operation is not None, f"{method} {template} is not documented"
        self.seen.add((method, template))
        responses = dict(operation["responses"])
        if operation.get("security") != []:  # every guarded operation may answer 401 when a token is set
            responses.setdefault("401", {"$ref": "#/components/responses/Unauthorized"})
        assert str(answer.status) in responses, f"{method} {path} answered {answer.status}, not documented"
        spec = responses[str(answer.status)]
        if "$ref" in spec:
            spec = document()["components"]["responses"][spec["$ref"].rsplit("/", 1)[1]]
        content = spec.get("content")
        if content is None:
            assert answer.text == "", f"{method} {path} {answer.status} should have no body"
            return
        assert answer.content_type in content, f"{method} {path}: {answer.content_type} not in {list(content)}"
        schema = content[answer.content_type]["schema"]
        if answer.content_type == "application/json":
            wrapped = {**schema, "components": document()["components"]}
            jsonschema.Draft202012Validator(wrapped).validate(answer.json())
