"""The PROTOBUF schema type of the Schema Registry: parse .proto text or a base64 FileDescriptorProto with
protoc (grpcio-tools' ``python -m grpc_tools.protoc``, a child process of ~50 ms, so its messages never mix
with the process's own standard error; references and the built-in google/protobuf, google/type and confluent
files the schema imports are given to it as a descriptor set, so a well-known file registered as a subject is
a schema like any other; its error is protoc's first error line), a canonical .proto text printed from the
descriptor (so text and descriptor forms of one schema share an id), the base64 descriptor for
``format=serialized``, and Confluent's Protobuf compatibility rules (in mockbroker.registry.protobuf_compat).
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
_IMPORT = re.compile(r"\bimport\s+(?:public\s+|weak\s+)?\"([^\"]+)\"\s*;")
# an absl log line: severity, date, time, thread, file:line] message
_ABSL_LINE = re.compile(r"([IWEF])\d{4} [\d:.]+\s+\d+ [^\]\s]+:\d+\] (.*)")
_ABSL_PREAMBLE = "WARNING: All log messages before absl::InitializeLog()"
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


def _imports(source: str) -> list[str]:
    """The files a .proto text imports (read before protoc sees it: which well-known files to give it). An
    import named in a comment counts too: one file too many is harmless, one too few would not resolve."""
    return _IMPORT.findall(source)


def _builtins_needed(imports: list[str], references: dict[str, str]) -> list[descriptor_pb2.FileDescriptorProto]:
    """The built-in files the given files import, and theirs, but those a reference provides: protoc gets only
    these, as Confluent's registry resolves only what a schema imports, so a schema that is itself a
    well-known file (confluent-kafka's ProtobufSerializer with skip.known.types=False registers
    google/protobuf/timestamp.proto as a subject) does not meet its built-in twin."""
    builtins = _builtin_files()
    needed: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    pending = list(imports)
    while pending:
        name = pending.pop()
        if name in needed or name in references or name not in builtins:
            continue
        fdp = needed[name] = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(builtins[name])
        pending.extend(fdp.dependency)
    return list(needed.values())


def _protoc_error(err: str, tmp: str) -> str:
    """protoc's first error line: its own ``file:line:col: message`` lines, or the message of an absl log
    line (``E0000 00:00:... descriptor_database.cc:NNN] Symbol name ... conflicts ...``); never absl's
    ``WARNING: All log messages before absl::InitializeLog()`` preamble, info lines or warnings."""
    for raw in err.splitlines():
        line = raw.strip()
        absl = _ABSL_LINE.match(line)
        if absl is not None:
            if absl.group(1) in "IW":
                continue
            line = absl.group(2).strip()
        if not line or line.startswith(_ABSL_PREAMBLE) or ": warning:" in line:
            continue
        return line.replace(tmp + os.sep, "")
    return "protoc failed"


def _compile(text: str, references: dict[str, str]) -> ProtoSchema:
    main_name = MAIN_NAME if MAIN_NAME not in references else "mockbroker_registry_main.proto"
    given = descriptor_pb2.FileDescriptorSet()
    imports: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mockbroker-proto-") as tmp:
        sources: dict[str, str] = dict()
        for name, given_text in [*references.items(), (main_name, text)]:
            if not isinstance(given_text, str):
                raise SchemaError(f"reference '{name}' is not a string")
            fdp = _decode(given_text.strip())  # a base64 FileDescriptorProto, else .proto text for protoc
            if fdp is None:
                sources[name] = given_text
                imports.extend(_imports(given_text))
            else:
                fdp.name = name
                given.file.append(fdp)
                imports.extend(fdp.dependency)
        given.file.extend(_builtins_needed(imports, references))
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
            raise SchemaError(f"invalid Protobuf schema: {_protoc_error(err, tmp)}")
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
