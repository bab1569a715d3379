"""Emitting straight-line reader and writer functions for one struct at one version.

Each (struct, version) becomes a pair of functions ``_r_<Struct>_<n>(buf, pos)`` and
``_w_<Struct>_<n>(o, out, holes)``.  Versions whose layout is identical share one function.
Readers inline fixed-width fields (grouped into one precompiled ``struct.Struct``) and one-byte
varints; writers append to a ``bytearray`` and leave large records fields as holes.
"""

from __future__ import annotations

from struct import calcsize

from spec import PRIMITIVES, FieldDef, MessageDef, StructDef


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1

    def __call__(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def indent(self) -> Lines:
        self.depth += 1
        return self

    def dedent(self) -> None:
        self.depth -= 1


def default_expr(f: FieldDef, class_of: dict[str, str]) -> str:
    """A Python expression for the field's default value (fresh for mutable values)."""
    if f.default == "null":
        return "None"
    if f.is_array:
        return "[]"
    if f.is_struct:
        return f"{class_of[f.struct.name]}()"
    t = f.type
    if t == "bool":
        return repr(bool(f.default))
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return repr(int(f.default or 0))
    if t == "float64":
        return repr(float(f.default or 0.0))
    if t == "string":
        return repr(f.default if isinstance(f.default, str) else "")
    if t == "uuid":
        return "ZERO_UUID"
    if t == "bytes":
        return "b''"
    if t == "records":
        return "None"
    raise ValueError(t)


class CodecEmitter:
    """Collects the functions of one generated module, sharing identical bodies."""

    def __init__(self, message: MessageDef, class_of: dict[str, str]) -> None:
        self.message = message
        self.class_of = class_of
        self.structs_used: set[str] = set()
        self.functions: list[str] = []
        self._by_body: dict[str, str] = {}
        self._memo: dict[tuple[str, str, int], str] = {}
        self.tmp = 0

    # -- naming and dedup -------------------------------------------------------------------
    def _define(self, prefix: str, struct: StructDef, version: int, params: str, body: list[str]) -> str:
        text = "\n".join(body)
        key = f"{prefix}|{struct.name}|{params}\n{text}"
        name = self._by_body.get(key)
        if name is None:
            name = f"_{prefix}_{struct.name}_{version}"
            self._by_body[key] = name
            self.functions.append(f"def {name}({params}):\n{text}\n")
        return name

    def fixed_struct(self, codes: str) -> str:
        self.structs_used.add(codes)
        return "_S_" + codes.replace("16s", "u").replace("?", "o")

    def flex(self, f: FieldDef, version: int) -> bool:
        if f.flexible != "inherit":
            return f.flexible is not None and f.flexible[0] <= version <= f.flexible[1]
        return self.message.flexible_in(version)

    def struct_flexible(self, version: int) -> bool:
        return self.message.flexible_in(version)

    def fresh(self, base: str) -> str:
        self.tmp += 1
        return f"{base}{self.tmp}"

    # -- readers ----------------------------------------------------------------------------
    def reader(self, struct: StructDef, version: int) -> str:
        memo = ("r", struct.name, version)
        if memo in self._memo:
            return self._memo[memo]
        saved_tmp, self.tmp = self.tmp, 0
        L = Lines()
        L("_f = ''")
        L("try:")
        L.indent()
        regular = [f for f in struct.fields if f.present_in(version) and not f.tagged_in(version)]
        tagged = [f for f in struct.fields if f.present_in(version) and f.tagged_in(version)]
        group: list[FieldDef] = []
        for f in regular:
            if f.type in PRIMITIVES:
                group.append(f)
                continue
            self._read_group(L, group)
            group = []
            L(f"_f = {f.attr!r}")
            self._read_value(L, f, version, f"a_{f.attr}")
        self._read_group(L, group)
        if self.struct_flexible(version):
            self._read_tags(L, tagged, version)
        if L.lines[-1] == "    try:":
            L("pass")
        L.dedent()
        L("except (CodecError, StructError, IndexError, ValueError) as _e:")
        L("    raise wrap_error(_e, _f, pos) from None")
        args = []
        for f in struct.fields:
            args.append(f"a_{f.attr}" if f.present_in(version) else default_expr(f, self.class_of))
        args.append("unknown" if self.struct_flexible(version) else "None")
        L(f"return {self.class_of[struct.name]}({', '.join(args)}), pos")
        self.tmp = saved_tmp
        name = self._define("r", struct, version, "buf, pos", L.lines)
        self._memo[memo] = name
        return name

    def _read_group(self, L: Lines, group: list[FieldDef]) -> None:
        if not group:
            return
        codes = "".join(PRIMITIVES[f.type] for f in group)
        s = self.fixed_struct(codes)
        names = ", ".join(f"a_{f.attr}" for f in group)
        L(f"_f = {group[0].attr!r}")
        if len(group) == 1:
            L(f"{names} = {s}.unpack_from(buf, pos)[0]")
        else:
            L(f"{names} = {s}.unpack_from(buf, pos)")
        L(f"pos += {calcsize('>' + codes)}")

    def _read_len(self, L: Lines, var: str, flex: bool, wide: bool) -> None:
        """Read a length/count: compact (uvarint N+1, so -1 is null) or int16/int32."""
        if flex:
            L(f"{var} = buf[pos]")
            L(f"if {var} < 128:")
            L("    pos += 1")
            L("else:")
            L(f"    {var}, pos = read_uvarint(buf, pos)")
            L(f"{var} -= 1")
        else:
            s = self.fixed_struct("i" if wide else "h")
            L(f"{var} = {s}.unpack_from(buf, pos)[0]")
            L(f"pos += {4 if wide else 2}")

    def _null_branch(self, L: Lines, f: FieldDef, version: int, n: str, target: str) -> None:
        L(f"if {n} < 0:")
        if f.nullable_in(version):
            L(f"    if {n} != -1:")
            L(f"        raise bad_length({n}, pos, {f.attr!r})")
            L(f"    {target} = None")
        else:
            L(f"    raise bad_length({n}, pos, {f.attr!r})")
        L("else:")

    def _read_value(self, L: Lines, f: FieldDef, version: int, target: str, elem: bool = False) -> None:
        flex = self.flex(f, version)
        t = f.element if elem else f.type
        if f.is_array and not elem:
            n = self.fresh("n")
            self._read_len(L, n, flex, wide=True)
            self._null_branch(L, f, version, n, target)
            L.indent()
            L(f"if {n} > len(buf) - pos:")
            L(f"    raise bad_count({n}, pos)")
            if f.is_struct:
                sub = self.reader(f.struct, version)
                L(f"{target} = []")
                L(f"for _ in range({n}):")
                e = self.fresh("e")
                L(f"    {e}, pos = {sub}(buf, pos)")
                L(f"    {target}.append({e})")
            elif f.element in PRIMITIVES:
                L(f"{target}, pos = read_primitive_array(buf, pos, {n}, {PRIMITIVES[f.element]!r})")
            else:
                L(f"{target} = []")
                L(f"for _ in range({n}):")
                e = self.fresh("e")
                L.indent()
                self._read_value(L, f, version, e, elem=True)
                L(f"{target}.append({e})")
                L.dedent()
            L.dedent()
            return
        if f.is_struct:
            sub = self.reader(f.struct, version)
            if f.nullable_in(version):
                L("if buf[pos] >= 128:")
                L("    pos += 1")
                L(f"    {target} = None")
                L("else:")
                L(f"    {target}, pos = {sub}(buf, pos + 1)")
            else:
                L(f"{target}, pos = {sub}(buf, pos)")
            return
        if t in PRIMITIVES:
            s = self.fixed_struct(PRIMITIVES[t])
            L(f"{target} = {s}.unpack_from(buf, pos)[0]")
            L(f"pos += {calcsize('>' + PRIMITIVES[t])}")
            return
        n = self.fresh("n")
        self._read_len(L, n, flex, wide=(t != "string"))
        if t == "records":
            L(f"if {n} < 0:")
            L(f"    if {n} != -1:")
            L(f"        raise bad_length({n}, pos, 'records')")
            L(f"    {target} = None")
            L("else:")
        elif elem:
            L(f"if {n} < 0:")
            L(f"    raise bad_length({n}, pos, 'array element')")
            L("else:")
        else:
            self._null_branch(L, f, version, n, target)
        L.indent()
        L(f"end = pos + {n}")
        L("if end > len(buf):")
        L(f"    raise TruncatedError('{t} of %d bytes runs past the end of the data' % {n}, pos)")
        if t == "string":
            L(f"{target} = str(buf[pos:end], 'utf-8')")
        elif t == "bytes":
            L(f"{target} = bytes(buf[pos:end])")
        else:
            L(f"{target} = buf[pos:end]")
        L("pos = end")
        L.dedent()

    def _read_tags(self, L: Lines, tagged: list[FieldDef], version: int) -> None:
        L("_f = '<tagged fields>'")
        for f in tagged:
            L(f"a_{f.attr} = {default_expr(f, self.class_of)}")
        L("unknown = None")
        L("if buf[pos] == 0:")
        L("    pos += 1")
        L("else:")
        L.indent()
        L("ntags, pos = read_uvarint(buf, pos)")
        L("for _ in range(ntags):")
        L.indent()
        L("tag, pos = read_uvarint(buf, pos)")
        L("size, pos = read_uvarint(buf, pos)")
        L("tag_end = check_span(buf, pos, size, 'tagged field')")
        first = True
        for f in sorted(tagged, key=lambda x: x.tag):
            L(f"{'if' if first else 'elif'} tag == {f.tag}:")
            first = False
            L.indent()
            L(f"_f = {f.attr!r}")
            L("tbuf = buf[:tag_end]")
            L("buf, saved = tbuf, buf")
            self._read_value(L, f, version, f"a_{f.attr}")
            L("buf = saved")
            L("if pos != tag_end:")
            L("    raise bad_length(size, pos, 'tagged field')")
            L.dedent()
        if first:
            L("if True:")
        else:
            L("else:")
        L.indent()
        L("if unknown is None:")
        L("    unknown = []")
        L("unknown.append((tag, bytes(buf[pos:tag_end])))")
        L("pos = tag_end")
        L.dedent()
        L.dedent()
        L.dedent()

    # -- writers ----------------------------------------------------------------------------
    def writer(self, struct: StructDef, version: int) -> str:
        memo = ("w", struct.name, version)
        if memo in self._memo:
            return self._memo[memo]
        saved_tmp, self.tmp = self.tmp, 0
        L = Lines()
        regular = [f for f in struct.fields if f.present_in(version) and not f.tagged_in(version)]
        tagged = [f for f in struct.fields if f.present_in(version) and f.tagged_in(version)]
        group: list[FieldDef] = []
        for f in regular:
            if f.type in PRIMITIVES:
                group.append(f)
                continue
            self._write_group(L, group)
            group = []
            self._write_value(L, f, version, f"o.{f.attr}", "out")
        self._write_group(L, group)
        if self.struct_flexible(version):
            if tagged:
                L("tags = []")
                for f in sorted(tagged, key=lambda x: x.tag):
                    v = self.fresh("v")
                    L(f"{v} = o.{f.attr}")
                    L(f"if {self._non_default(f, v)}:")
                    L.indent()
                    L("t = bytearray()")
                    self._write_value(L, f, version, v, "t")
                    L(f"tags.append(({f.tag}, t))")
                    L.dedent()
                L("if o.unknown_tags:")
                L("    tags.extend(o.unknown_tags)")
                L("if tags:")
                L("    write_tags(out, tags)")
                L("else:")
                L("    out.append(0)")
            else:
                L("write_unknown_tags(out, o.unknown_tags)")
        if not L.lines:
            L("pass")
        self.tmp = saved_tmp
        name = self._define("w", struct, version, "o, out, holes", L.lines)
        self._memo[memo] = name
        return name

    def _non_default(self, f: FieldDef, v: str) -> str:
        d = default_expr(f, self.class_of)
        if d == "None":
            return f"{v} is not None"
        if d == "[]":
            return f"{v}"
        if f.is_struct and all(sf.type in PRIMITIVES or sf.type == "string" for sf in f.struct.fields):
            # a flat struct: compare field by field instead of building a default instance
            checks = [f"{v}.{sf.attr} != {default_expr(sf, self.class_of)}" for sf in f.struct.fields]
            return " or ".join([*checks, f"{v}.unknown_tags"])
        return f"{v} != {d}"

    def _write_group(self, L: Lines, group: list[FieldDef]) -> None:
        if not group:
            return
        s = self.fixed_struct("".join(PRIMITIVES[f.type] for f in group))
        L(f"out += {s}.pack({', '.join(f'o.{f.attr}' for f in group)})")

    def _write_len(self, L: Lines, out: str, n: str, flex: bool, wide: bool) -> None:
        if flex:
            L(f"if {n} < 127:")
            L(f"    {out}.append({n} + 1)")
            L("else:")
            L(f"    write_uvarint({out}, {n} + 1)")
        else:
            L(f"{out} += {self.fixed_struct('i' if wide else 'h')}.pack({n})")

    def _write_null(self, L: Lines, f: FieldDef, version: int, v: str, out: str, wide: bool) -> None:
        flex = self.flex(f, version)
        L(f"if {v} is None:")
        if f.nullable_in(version) or f.type == "records":
            null = "NULL32" if wide else "NULL16"
            L(f"    {out}.append(0)" if flex else f"    {out} += {null}")
        else:
            L(f"    raise EncodeError('{f.attr} is null but not nullable in this version')")
        L("else:")

    def _write_value(self, L: Lines, f: FieldDef, version: int, v: str, out: str, elem: bool = False) -> None:
        flex = self.flex(f, version)
        t = f.element if elem else f.type
        if f.is_array and not elem:
            self._write_null(L, f, version, v, out, wide=True)
            L.indent()
            self._write_len(L, out, f"len({v})", flex, wide=True)
            e = self.fresh("e")
            if f.is_struct:
                sub = self.writer(f.struct, version)
                L(f"if type({v}) is EncodedList:")
                L(f"    {v}.encode_into({sub}, {out}, holes)")
                L("else:")
                L(f"    for {e} in {v}:")
                L(f"        {sub}({e}, {out}, holes)")
            elif f.element in PRIMITIVES:
                code = PRIMITIVES[f.element]
                L(f"{out} += pack_array({code!r}, {v})")
            else:
                L(f"for {e} in {v}:")
                L.indent()
                self._write_value(L, f, version, e, out, elem=True)
                L.dedent()
            L.dedent()
            return
        if f.is_struct:
            sub = self.writer(f.struct, version)
            if f.nullable_in(version):
                L(f"if {v} is None:")
                L(f"    {out}.append(255)")
                L("else:")
                L(f"    {out}.append(1)")
                L(f"    {sub}({v}, {out}, holes)")
            else:
                L(f"{sub}({v}, {out}, holes)")
            return
        if t in PRIMITIVES:
            L(f"{out} += {self.fixed_struct(PRIMITIVES[t])}.pack({v})")
            return
        if t == "records":
            L(f"write_records({out}, holes, {v}, {flex})")
            return
        if not elem:
            self._write_null(L, f, version, v, out, wide=(t != "string"))
            L.indent()
        b = self.fresh("b")
        L(f"{b} = {v}.encode()" if t == "string" else f"{b} = {v}")
        self._write_len(L, out, f"len({b})", flex, wide=(t != "string"))
        L(f"{out} += {b}")
        if not elem:
            L.dedent()
