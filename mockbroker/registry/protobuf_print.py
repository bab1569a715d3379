"""Print a FileDescriptorProto as .proto text: the canonical text of a PROTOBUF schema.  Only printing; all
parsing is protoc's.  Type names are printed fully qualified (``.pkg.Type``).  Options are printed from
their known fields; custom options (extensions) are not printed."""

from __future__ import annotations

from google.protobuf import descriptor_pb2  # type: ignore[import-untyped]
from google.protobuf.descriptor import FieldDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import Message  # type: ignore[import-untyped]

FDP = descriptor_pb2.FieldDescriptorProto
_SCALARS = {value: name[len("TYPE_"):].lower() for name, value in FDP.Type.items()}
_MAX_FIELD = 536870912


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _value(fd: FieldDescriptor, value: object) -> str:
    if fd.type == FieldDescriptor.TYPE_ENUM and fd.enum_type is not None:
        return fd.enum_type.values_by_number[int(value)].name  # type: ignore[call-overload]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return _quote(value.decode("latin-1"))
    if isinstance(value, str):
        return _quote(value)
    return str(value)


def _options(options: Message, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for fd, value in options.ListFields():
        if fd.is_extension or fd.name in skip or fd.message_type is not None:
            continue
        repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == FieldDescriptor.LABEL_REPEATED
        values = value if repeated else [value]
        out.extend((fd.name, _value(fd, v)) for v in values)
    return out


def _ranges(ranges: list[tuple[int, int]], keyword: str, pad: str) -> list[str]:
    if not ranges:
        return []
    parts = []
    for start, end in ranges:
        last = end - 1
        parts.append(str(start) if last == start else f"{start} to {'max' if end >= _MAX_FIELD else last}")
    return [f"{pad}{keyword} {', '.join(parts)};"]


def _field(fld: descriptor_pb2.FieldDescriptorProto, syntax: str, maps: dict[str, descriptor_pb2.DescriptorProto],
           pad: str) -> str:
    if fld.type_name and fld.type_name in maps:
        entry = maps[fld.type_name]
        key, val = entry.field[0], entry.field[1]
        head = f"map<{_type(key)}, {_type(val)}>"
    else:
        label = ""
        if fld.label == FDP.LABEL_REPEATED:
            label = "repeated "
        elif fld.label == FDP.LABEL_REQUIRED:
            label = "required "
        elif fld.proto3_optional or (syntax == "proto2" and not fld.HasField("oneof_index")):
            label = "optional "
        head = f"{label}{_type(fld)}"
    opts = []
    if fld.HasField("default_value"):
        dv = fld.default_value
        if fld.type in (FDP.TYPE_STRING, FDP.TYPE_BYTES):
            dv = '"' + dv.replace('"', '\\"') + '"' if fld.type == FDP.TYPE_STRING else f'"{dv}"'
        opts.append(("default", dv))
    if fld.HasField("json_name"):
        opts.append(("json_name", _quote(fld.json_name)))
    opts.extend(_options(fld.options))
    suffix = " [" + ", ".join(f"{k} = {v}" for k, v in opts) + "]" if opts else ""
    return f"{pad}{head} {fld.name} = {fld.number}{suffix};"


def _type(fld: descriptor_pb2.FieldDescriptorProto) -> str:
    return fld.type_name if fld.type_name else _SCALARS[fld.type]


def _enum(enum: descriptor_pb2.EnumDescriptorProto, pad: str) -> list[str]:
    lines = [f"{pad}enum {enum.name} {{"]
    lines += [f"{pad}  option {k} = {v};" for k, v in _options(enum.options)]
    for value in enum.value:
        opts = _options(value.options)
        suffix = " [" + ", ".join(f"{k} = {v}" for k, v in opts) + "]" if opts else ""
        lines.append(f"{pad}  {value.name} = {value.number}{suffix};")
    lines += _ranges([(r.start, r.end + 1) for r in enum.reserved_range], "reserved", pad + "  ")
    if enum.reserved_name:
        lines.append(f"{pad}  reserved {', '.join(_quote(n) for n in enum.reserved_name)};")
    return [*lines, f"{pad}}}"]


def _extensions(exts: list[descriptor_pb2.FieldDescriptorProto], syntax: str, pad: str) -> list[str]:
    lines: list[str] = []
    for extendee in dict.fromkeys(e.extendee for e in exts):
        lines.append(f"{pad}extend {extendee} {{")
        lines += [_field(e, syntax, {}, pad + "  ") for e in exts if e.extendee == extendee]
        lines.append(f"{pad}}}")
    return lines


def _message(msg: descriptor_pb2.DescriptorProto, scope: str, syntax: str, pad: str) -> list[str]:
    full = f"{scope}.{msg.name}"
    maps = {f"{full}.{n.name}": n for n in msg.nested_type if n.options.map_entry}
    lines = [f"{pad}message {msg.name} {{"]
    inner = pad + "  "
    lines += [f"{inner}option {k} = {v};" for k, v in _options(msg.options, ("map_entry",))]
    done: set[int] = set()
    for fld in msg.field:
        if fld.HasField("oneof_index") and not fld.proto3_optional:
            index = fld.oneof_index
            if index in done:
                continue
            done.add(index)
            lines.append(f"{inner}oneof {msg.oneof_decl[index].name} {{")
            lines += [f"{inner}  option {k} = {v};" for k, v in _options(msg.oneof_decl[index].options)]
            lines += [_field(f, syntax, maps, inner + "  ") for f in msg.field
                      if f.HasField("oneof_index") and f.oneof_index == index]
            lines.append(f"{inner}}}")
        else:
            lines.append(_field(fld, syntax, maps, inner))
    for nested in msg.nested_type:
        if not nested.options.map_entry:
            lines += _message(nested, full, syntax, inner)
    for enum in msg.enum_type:
        lines += _enum(enum, inner)
    lines += _ranges([(r.start, r.end) for r in msg.extension_range], "extensions", inner)
    lines += _extensions(list(msg.extension), syntax, inner)
    lines += _ranges([(r.start, r.end) for r in msg.reserved_range], "reserved", inner)
    if msg.reserved_name:
        lines.append(f"{inner}reserved {', '.join(_quote(n) for n in msg.reserved_name)};")
    return [*lines, f"{pad}}}"]


def print_file(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    """The .proto text of a file descriptor (proto2 or proto3; editions files are refused)."""
    syntax = fdp.syntax or "proto2"
    if syntax not in ("proto2", "proto3"):
        raise ValueError(f"syntax '{syntax}' is not supported (only proto2 and proto3)")
    if any(f.type == FDP.TYPE_GROUP for m in _all_messages(fdp.message_type) for f in m.field):
        raise ValueError("proto2 groups are not supported")
    lines = [f'syntax = "{syntax}";']
    if fdp.package:
        lines.append(f"package {fdp.package};")
    public, weak = set(fdp.public_dependency), set(fdp.weak_dependency)
    for i, dep in enumerate(fdp.dependency):
        kind = "public " if i in public else "weak " if i in weak else ""
        lines.append(f"import {kind}{_quote(dep)};")
    lines += [f"option {k} = {v};" for k, v in _options(fdp.options)]
    scope = f".{fdp.package}" if fdp.package else ""
    for msg in fdp.message_type:
        lines += _message(msg, scope, syntax, "")
    for enum in fdp.enum_type:
        lines += _enum(enum, "")
    lines += _extensions(list(fdp.extension), syntax, "")
    for service in fdp.service:
        lines.append(f"service {service.name} {{")
        lines += [f"  option {k} = {v};" for k, v in _options(service.options)]
        for method in service.method:
            cin = "stream " if method.client_streaming else ""
            sout = "stream " if method.server_streaming else ""
            opts = _options(method.options)
            body = " {" + "".join(f" option {k} = {v};" for k, v in opts) + " }" if opts else ";"
            lines.append(f"  rpc {method.name} ({cin}{method.input_type}) returns ({sout}{method.output_type}){body}")
        lines.append("}")
    return "\n".join(lines) + "\n"


def _all_messages(msgs: object) -> list[descriptor_pb2.DescriptorProto]:
    out: list[descriptor_pb2.DescriptorProto] = []
    for msg in msgs:  # type: ignore[attr-defined]
        out.append(msg)
        out += _all_messages(msg.nested_type)
    return out
