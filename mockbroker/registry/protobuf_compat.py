"""Confluent's Protobuf compatibility rules: ``incompatibilities(reader, writer)`` compares the writer's first
message (and every message type it reaches) with the reader's message of the same name.  Fields are matched
by number.  Incompatible: MESSAGE_REMOVED, FIELD_KIND_CHANGED (scalar / message / enum; an enum and a varint
scalar are alike), FIELD_SCALAR_KIND_CHANGED (outside the wire-compatible groups), FIELD_NAMED_TYPE_CHANGED
(names compared without their file's package), FIELD_NUMERIC_LABEL_CHANGED (a number field made repeated or
singular), REQUIRED_FIELD_ADDED (or made required), REQUIRED_FIELD_REMOVED, ONEOF_FIELD_REMOVED,
MULTIPLE_FIELDS_MOVED_TO_ONEOF and FIELD_MOVED_TO_EXISTING_ONEOF.  Compatible (no reason), as in Confluent's
own examples: a package change, fields added or removed, renamed fields, messages and enums added or moved,
enum constants added, removed or renamed, repeated <-> singular for strings, bytes and messages."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2  # type: ignore[import-untyped]

FDP = descriptor_pb2.FieldDescriptorProto
_GROUPS = [
    {FDP.TYPE_INT32, FDP.TYPE_UINT32, FDP.TYPE_INT64, FDP.TYPE_UINT64, FDP.TYPE_BOOL},
    {FDP.TYPE_SINT32, FDP.TYPE_SINT64},
    {FDP.TYPE_FIXED32, FDP.TYPE_SFIXED32},
    {FDP.TYPE_FIXED64, FDP.TYPE_SFIXED64},
    {FDP.TYPE_STRING, FDP.TYPE_BYTES},
]
_NAMES = {value: name[len("TYPE_"):].lower() for name, value in FDP.Type.items()}


def _packages(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> dict[str, str]:
    """The package of the file that defines each message and enum, by full name."""
    return {name: fdp.package for fdp in files.values() for name in _types({fdp.name: fdp})}


def _types(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> dict[str, Any]:
    """Every message and enum of the files by full name ('.pkg.Name')."""
    out: dict[str, Any] = {}

    def walk(msgs: Any, enums: Any, scope: str) -> None:
        for enum in enums:
            out[f"{scope}.{enum.name}"] = enum
        for msg in msgs:
            out[f"{scope}.{msg.name}"] = msg
            walk(msg.nested_type, msg.enum_type, f"{scope}.{msg.name}")

    for fdp in files.values():
        walk(fdp.message_type, fdp.enum_type, f".{fdp.package}" if fdp.package else "")
    return out


def _kind(fld: descriptor_pb2.FieldDescriptorProto) -> str:
    if fld.type in (FDP.TYPE_MESSAGE, FDP.TYPE_GROUP):
        return "message"
    return "enum" if fld.type == FDP.TYPE_ENUM else "scalar"


def _local(name: str, package: str) -> str:
    """A full type name relative to its package (so a package change alone is reported once)."""
    prefix = f".{package}." if package else "."
    return name[len(prefix):] if name.startswith(prefix) else name


class _Diff:
    def __init__(self, writer: Any, reader: Any) -> None:
        self.w, self.r = writer, reader
        self.wtypes, self.rtypes = _types(writer.files), _types(reader.files)
        self.wpackages, self.rpackages = _packages(writer.files), _packages(reader.files)
        self.seen: set[str] = set()
        self.out: list[str] = []

    def run(self) -> list[str]:
        wm = self.w.main
        # a package change alone is compatible (Confluent's PACKAGE_CHANGED is not an incompatibility)
        # a proto2 <-> proto3 change alone is not refused: proto2 optional and proto3 fields are the same bytes
        if wm.message_type:
            first = wm.message_type[0].name
            self.message(f".{wm.package}.{first}" if wm.package else f".{first}")
        return self.out

    def message(self, wname: str, rname: str | None = None) -> None:
        """Compare the writer's message ``wname`` with the reader's ``rname`` (by default the one of the same
        name relative to the reader's package)."""
        if wname in self.seen:
            return
        self.seen.add(wname)
        local = _local(wname, self.wpackages.get(wname, self.w.main.package))
        if rname is None:
            rname = f".{self.r.main.package}.{local}" if self.r.main.package else f".{local}"
        wmsg, rmsg = self.wtypes.get(wname), self.rtypes.get(rname)
        if not isinstance(wmsg, descriptor_pb2.DescriptorProto):
            return
        if not isinstance(rmsg, descriptor_pb2.DescriptorProto):
            self.out.append(f"MESSAGE_REMOVED: message '{local}' of the writer is missing from the reader")
            return
        wf = {f.number: f for f in wmsg.field}
        rf = {f.number: f for f in rmsg.field}
        where = f"message '{local}'"
        for number, fld in wf.items():
            what = f"field '{fld.name}' (number {number}) of {where}"
            if number not in rf:
                if fld.label == FDP.LABEL_REQUIRED:
                    self.out.append(f"REQUIRED_FIELD_REMOVED: required {what} is missing from the reader")
                elif fld.HasField("oneof_index") and not fld.proto3_optional:
                    oneof = wmsg.oneof_decl[fld.oneof_index].name
                    self.out.append(f"ONEOF_FIELD_REMOVED: {what} in oneof '{oneof}' is missing from the reader")
                continue
            self.field(what, fld, rf[number])
        for number, fld in rf.items():
            if number not in wf and fld.label == FDP.LABEL_REQUIRED:
                self.out.append(f"REQUIRED_FIELD_ADDED: required field '{fld.name}' (number {number}) of {where} "
                                "is missing from the writer")
        self.oneofs(where, wmsg, rmsg, wf)

    def oneofs(self, where: str, wmsg: Any, rmsg: Any, wf: dict[int, Any]) -> None:
        woneofs = {o.name for i, o in enumerate(wmsg.oneof_decl)
                   if any(f.HasField("oneof_index") and f.oneof_index == i and not f.proto3_optional
                          for f in wmsg.field)}
        for index, oneof in enumerate(rmsg.oneof_decl):
            members = [f for f in rmsg.field
                       if f.HasField("oneof_index") and f.oneof_index == index and not f.proto3_optional]
            moved = [f for f in members if f.number in wf
                     and (not wf[f.number].HasField("oneof_index") or wf[f.number].proto3_optional)]
            names = ", ".join(f"'{f.name}'" for f in moved)
            if len(moved) > 1:
                self.out.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF: fields {names} of {where} are in oneof "
                                f"'{oneof.name}' in the reader but not in a oneof in the writer")
            elif moved and oneof.name in woneofs:
                self.out.append(f"FIELD_MOVED_TO_EXISTING_ONEOF: field {names} of {where} is in the existing "
                                f"oneof '{oneof.name}' in the reader but not in a oneof in the writer")

    def field(self, what: str, wfld: Any, rfld: Any) -> None:
        if rfld.label == FDP.LABEL_REQUIRED and wfld.label != FDP.LABEL_REQUIRED:
            self.out.append(f"REQUIRED_FIELD_ADDED: {what} is required in the reader and not in the writer")
        wkind, rkind = _kind(wfld), _kind(rfld)
        if (wfld.label == FDP.LABEL_REPEATED) != (rfld.label == FDP.LABEL_REPEATED) and not (
                {wkind, rkind} == {"message"} or {wfld.type, rfld.type} <= {FDP.TYPE_STRING, FDP.TYPE_BYTES}):
            self.out.append(f"FIELD_NUMERIC_LABEL_CHANGED: {what} is {_label(wfld)} in the writer and "
                            f"{_label(rfld)} in the reader")
        if {wkind, rkind} == {"enum", "scalar"} and {wfld.type, rfld.type} - {FDP.TYPE_ENUM} <= _GROUPS[0]:
            return  # an enum is a varint on the wire
        if wkind != rkind:
            self.out.append(f"FIELD_KIND_CHANGED: {what} is a {wkind} in the writer and a {rkind} in the reader")
            return
        if wkind == "scalar":
            if wfld.type != rfld.type and not any(wfld.type in g and rfld.type in g for g in _GROUPS):
                self.out.append(f"FIELD_SCALAR_KIND_CHANGED: {what} is {_NAMES[wfld.type]} in the writer and "
                                f"{_NAMES[rfld.type]} in the reader (not wire compatible)")
            return
        wlocal = _local(wfld.type_name, self.wpackages.get(wfld.type_name, self.w.main.package))
        rlocal = _local(rfld.type_name, self.rpackages.get(rfld.type_name, self.r.main.package))
        if wlocal != rlocal:
            self.out.append(f"FIELD_NAMED_TYPE_CHANGED: {what} has type '{wlocal}' in the writer and "
                            f"'{rlocal}' in the reader")
        elif wkind == "message":
            self.message(wfld.type_name, rfld.type_name)


def _label(fld: Any) -> str:
    return "repeated" if fld.label == FDP.LABEL_REPEATED else "singular"


def incompatibilities(reader: Any, writer: Any) -> list[str]:
    """Reasons data written with ``writer`` cannot be read with ``reader`` (two PROTOBUF ParsedSchemas)."""
    return _Diff(writer.parsed, reader.parsed).run()
