"""The PROTOBUF schema type of the Schema Registry: parse .proto text or a base64 FileDescriptorProto with
protoc (grpcio-tools' ``python -m grpc_tools.protoc``, a child process of ~50 ms, so its messages never mix
with the process's own standard error; references and the built-in google/protobuf, google/type and confluent
files are given to it as a descriptor set), a canonical .proto text printed from the descriptor (so text and
descriptor forms of one schema share an id), the base64 descriptor for ``format=serialized``, and
Confluent's Protobuf compatibility rules (in mockbroker.registry.protobuf_compat).
"""

from __future__ import annotations

import base64
import binascii
import importlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from google.protobuf import descriptor_pb2  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from mockbroker.registry.kinds import ParsedSchema, SchemaError
from mockbroker.registry.protobuf_compat import incompatibilities
from mockbroker.registry.protobuf_print import print_file

__all__ = ["KIND", "ProtoSchema", "incompatibilities", "parse", "serialized"]

KIND = "PROTOBUF"
MAIN_NAME = "schema.proto"
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+\Z")
_BUILTIN_MODULES = (
    [f"google.protobuf.{n}_pb2" for n in ("any", "api", "descriptor", "duration", "empty", "field_mask",
                                            "source_context", "struct", "timestamp", "type", "wrappers")]
    + [f"google.type.{n}_pb2" for n in ("calendar_period", "color", "date", "datetime", "dayofweek", "decimal",
                                        "expr", "fraction", "interval", "latlng", "localized_text", "money",
                                        "month", "phone_number", "postal_address", "quaternion", "timeofday")]
    + [f"confluent_kafka.schema_registry.confluent.{n}_pb2" for n in ("meta", "type.decimal", "types.decimal")]
)
PROTOC_TIMEOUT_S = 30
_builtins: dict[str, bytes] | None = None


@dataclass(frozen=True)
class ProtoSchema:
    """The main file's descriptor and every file it can use, by import name (the main file last)."""

    main: descriptor_pb2.FileDescriptorProto
    files: dict[str, descriptor_pb2.FileDescriptorProto]


def _builtin_files() -> dict[str, bytes]:
    """Serialized descriptors of the well-known files the registry resolves without references."""
    global _builtins
    if _builtins is None:
        found: dict[str, bytes] = {}
        pending = []
        for name in _BUILTIN_MODULES:
            try:
                pending.append(importlib.import_module(name).DESCRIPTOR)
            except Exception:  # an optional package may be missing
                continue
        while pending:
            fd = pending.pop()
            if fd.name not in found:
                found[fd.name] = fd.serialized_pb
                pending.extend(fd.dependencies)
        _builtins = found
    return _builtins


def _decode(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto in a base64 text, or None when the text is not one (then it is .proto text)."""
    if not _BASE64.match(text):
        return None
    try:
        raw = base64.b64decode("".join(text.split()), validate=True)
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(raw)
    except (binascii.Error, DecodeError, ValueError):
        return None
    return fdp


def _run_protoc(args: list[str]) -> tuple[int, str]:
    """protoc (grpcio-tools) as a child process of this Python: its exit code and what it wrote to stderr."""
    try:
        done = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", *args], capture_output=True,
                              timeout=PROTOC_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return 1, f"protoc took more than {PROTOC_TIMEOUT_S} s"
    return done.returncode, done.stderr.decode("utf-8", "replace")


def _normalize(fdp: descriptor_pb2.FileDescriptorProto) -> None:
    """Drop what protoc adds but generated code does not carry (default json names, source info)."""
    fdp.ClearField("source_code_info")

    def walk(msg: descriptor_pb2.DescriptorProto) -> None:
        for fld in list(msg.field) + list(msg.extension):
            if fld.HasField("json_name") and fld.json_name == _json_name(fld.name):
                fld.ClearField("json_name")
        for nested in msg.nested_type:
            walk(nested)

    for msg in fdp.message_type:
        walk(msg)
    for ext in fdp.extension:
        if ext.HasField("json_name") and ext.json_name == _json_name(ext.name):
            ext.ClearField("json_name")


def _json_name(name: str) -> str:
    out, upper = [], False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


def _compile(text: str, references: dict[str, str]) -> ProtoSchema:
    main_name = MAIN_NAME if MAIN_NAME not in references else "mockbroker_registry_main.proto"
    given = descriptor_pb2.FileDescriptorSet()
    builtins = _builtin_files()
    for name, raw in builtins.items():
        if name not in references:
            given.file.add().ParseFromString(raw)
    with tempfile.TemporaryDirectory(prefix="mockbroker-proto-") as tmp:
        sources: dict[str, str] = dict()
        for name, given_text in [*references.items(), (main_name, text)]:
            if not isinstance(given_text, str):
                raise SchemaError(f"reference '{name}' is not a string")
            fdp = _decode(given_text.strip())  # a base64 FileDescriptorProto, else .proto text for protoc
            if fdp is None:
                sources[name] = given_text
            else:
                fdp.name = name
                given.file.append(fdp)
        for name, source in sources.items():
            path = os.path.normpath(os.path.join(tmp, name))
            if not path.startswith(tmp + os.sep):
                raise SchemaError(f"reference name '{name}' is not a relative path")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(source)
        set_in = os.path.join(tmp, "__given__.pb")
        set_out = os.path.join(tmp, "__out__.pb")
        with open(set_in, "wb") as handle:
            handle.write(given.SerializeToString())
        code, err = _run_protoc([f"-I{tmp}", f"--descriptor_set_in={set_in}", "--include_imports",
                                 f"--descriptor_set_out={set_out}", main_name])
        if code != 0 or not os.path.exists(set_out):
            lines = [line.strip() for line in err.splitlines() if line.strip()]
            first = lines[0] if lines else "protoc failed"
            raise SchemaError(f"invalid Protobuf schema: {first.replace(tmp + os.sep, '')}")
        out = descriptor_pb2.FileDescriptorSet()
        with open(set_out, "rb") as handle:
            out.ParseFromString(handle.read())
    files = {f.name: f for f in out.file}
    for fdp in files.values():
        _normalize(fdp)
    return ProtoSchema(files[main_name], files)


def parse(text: str, references: dict[str, str]) -> ParsedSchema:
    """Parse .proto text or a base64 FileDescriptorProto; ``references`` maps import names to schema texts."""
    if not isinstance(text, str) or not text.strip():
        raise SchemaError("invalid Protobuf schema: the schema is empty")
    try:
        schema = _compile(text, references)
        canonical = print_file(schema.main)
    except SchemaError:
        raise
    except Exception as exc:  # any failure of protoc or the printer is a bad schema
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SchemaError(f"invalid Protobuf schema: {first}") from None
    return ParsedSchema(KIND, canonical, schema, tuple(references))


def serialized(parsed: ParsedSchema) -> str:
    """The base64 FileDescriptorProto of a parsed schema (what ``format=serialized`` answers)."""
    schema: ProtoSchema = parsed.parsed
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.CopyFrom(schema.main)
    fdp.name = MAIN_NAME
    return base64.standard_b64encode(fdp.SerializeToString(deterministic=True)).decode("ascii")
