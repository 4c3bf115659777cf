"""Projections (``-table``/``-row``/``-col``/``-ignore``) and filters (``-filter``).

A projection maps a :class:`~.parse.Result` to a :class:`Key`, a tuple
of field values. Keys order lexicographically by field; each field
sorts by first observation (default), ``@alpha``, ``@num`` or a fixed
list ``@(a b)`` (which also filters). Projections parsed by one
:class:`ProjectionParser` exclude each other's specific keys from the
group keys ``.config`` and ``.fullname``; whatever no projection covers
forms the *residue*, used to warn when a cell mixes benchmarks.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from .parse import GoNumberError, Result, name_base, name_parts, parse_go_float
from .query import (OP_AND, OP_NOT, OP_OR, FilterMatch, FilterOp, ProjectionField,
                    QuerySyntaxError, parse_filter, parse_projection)

__all__ = ["Field", "Projection", "Key", "ProjectionParser", "Filter", "sort_keys",
           "key_header", "non_singular_fields"]

Extractor = Callable[[Result], str]
# A filter function returns (mask over result.values or None, whole-result verdict).
FilterFn = Callable[[Result], Tuple[Optional[int], bool]]


def _extract_name(res: Result) -> str:
    return name_base(res.name)


def _extract_full(res: Result) -> str:
    return res.name


def _make_extractor(key: str) -> Extractor:
    if not key:
        raise ValueError("key must not be empty")
    if key == ".name":
        return _extract_name
    if key == ".fullname":
        return _extract_full
    if key.startswith("/"):
        prefix = key + "="
        is_gomaxprocs = key == "/gomaxprocs"

        def extract_part(res: Result) -> str:
            _, parts = name_parts(res.name)
            if is_gomaxprocs and parts and parts[-1].startswith("-"):
                return parts[-1][1:]
            for part in parts:
                if part.startswith(prefix):
                    return part[len(prefix):]
            return ""
        return extract_part

    def extract_config(res: Result) -> str:
        value = res.get_config(key)
        return "" if value is None else value
    return extract_config


def _make_fullname_extractor(exclude: Sequence[str]) -> Extractor:
    """``.fullname`` minus excluded ``/key=value`` parts (and ``-N``, ``.name``)."""
    deleted = [k + "=" for k in exclude if k.startswith("/")]
    exclude_name = ".name" in exclude
    exclude_gomaxprocs = "/gomaxprocs" in exclude
    if not deleted and not exclude_name:
        return _extract_full

    def extract(res: Result) -> str:
        name = res.name
        found = exclude_name or any(k in name for k in deleted) or \
            (exclude_gomaxprocs and "-" in name)
        if not found:
            return name
        base, parts = name_parts(name)
        out = ["*" if exclude_name else base]
        for part in parts:
            if any(part.startswith(k) for k in deleted):
                continue
            if exclude_gomaxprocs and part.startswith("-"):
                continue
            out.append(part)
        return "".join(out)
    return extract


_NUM_PREFIXES = "KMGTPEZY"
_NUM_RE = re.compile(r"([0-9.]+)([k" + _NUM_PREFIXES + r"]i?)?[bB]?")


def _parse_num(text: str) -> Optional[float]:
    """Fuzzy number parsing for ``@num`` (``2k``, ``1Mi``, ``64B``)."""
    try:
        return parse_go_float(text)
    except GoNumberError:
        pass
    match = _NUM_RE.search(text)
    if match:
        try:
            value = parse_go_float(match.group(1))
        except GoNumberError:
            return None
        exp = 0
        suffix = match.group(2) or ""
        if suffix:
            prefix = "K" if suffix[0] == "k" else suffix[0]
            exp = 1 + _NUM_PREFIXES.index(prefix)
        base = 1024.0 if suffix.endswith("i") else 1000.0
        return value * math.pow(base, exp)
    return None


def _cmp_alpha(a: str, b: str) -> int:
    return (a > b) - (a < b)


def _cmp_num(a: str, b: str) -> int:
    x, y = _parse_num(a), _parse_num(b)
    if x is not None and y is not None:
        if x < y or (not math.isnan(x) and math.isnan(y)):
            return -1
        if x > y or (math.isnan(x) and not math.isnan(y)):
            return 1
        return 0
    if x is None and y is None:
        return 0
    return -1 if x is not None else 1


_BUILTIN_ORDERS: Dict[str, Callable[[str, str], int]] = {"alpha": _cmp_alpha, "num": _cmp_num}


class Field:
    """A projection field; group fields (``.config``) have sub-fields instead of a slot."""

    def __init__(self, name: str, proj: "Projection", idx: int, is_tuple: bool = False) -> None:
        self.name = name
        self.proj = proj
        self.idx = idx
        self.is_tuple = is_tuple
        self.sub: List[Field] = []
        self.cmp: Callable[[str, str], int] = lambda a, b: 0
        self.order: Optional[Dict[str, int]] = None

    def __repr__(self) -> str:
        return "Field(%r)" % self.name


class Key:
    """An interned tuple of field values; identical values give the same object."""

    __slots__ = ("proj", "vals")

    def __init__(self, proj: "Projection", vals: Tuple[str, ...]) -> None:
        self.proj = proj
        self.vals = vals

    def get(self, fld: Field) -> str:
        """The value of a (non-group) field."""
        return self.vals[fld.idx] if fld.idx < len(self.vals) else ""

    def string_values(self) -> str:
        """Non-empty values in field order, joined by spaces (row labels)."""
        return " ".join(v for v in (self.get(f) for f in self.proj.flattened_fields()) if v)

    def __repr__(self) -> str:
        return "Key(%s)" % " ".join("%s:%s" % (f.name, self.get(f))
                                    for f in self.proj.flattened_fields() if self.get(f))


class Projection:
    """Extracts a subset of a result's fields into a :class:`Key`."""

    def __init__(self) -> None:
        self.root = Field("", self, -1, is_tuple=True)
        self.n_fields = 0
        self.unit_field: Optional[Field] = None
        self.projectors: List[Callable[[Result, List[str]], None]] = []
        self._keys: Dict[Tuple[str, ...], Key] = {}

    def add_field(self, group: Field, name: str) -> Field:
        fld = Field(name, self, self.n_fields)
        self.n_fields += 1
        group.sub.append(fld)
        return fld

    def add_group(self, group: Field, name: str) -> Field:
        fld = Field(name, self, -1, is_tuple=True)
        group.sub.append(fld)
        return fld

    def fields(self) -> List[Field]:
        """Top-level fields, as written in the projection expression."""
        return self.root.sub

    def flattened_fields(self) -> List[Field]:
        """Fields with groups expanded; also the sort order of keys."""
        out: List[Field] = []

        def walk(fld: Field) -> None:
            if fld.idx != -1:
                out.append(fld)
                return
            for sub in fld.sub:
                walk(sub)
        walk(self.root)
        return out

    def _populate(self, res: Result) -> List[str]:
        row: List[str] = []
        for project in self.projectors:
            project(res, row)
        return row

    def _intern(self, row: List[str]) -> Key:
        vals = list(row)
        while vals and vals[-1] == "":
            vals.pop()
        tup = tuple(vals)
        key = self._keys.get(tup)
        if key is not None:
            return key
        for fld in self.fields():
            if fld.order is None:
                continue
            val = tup[fld.idx] if fld.idx < len(tup) else ""
            if val not in fld.order:
                fld.order[val] = len(fld.order)
        key = Key(self, tup)
        self._keys[tup] = key
        return key

    def project(self, res: Result) -> Key:
        """The key of a whole result."""
        return self._intern(self._populate(res))

    def project_values(self, res: Result) -> List[Key]:
        """One key per measurement of the result (they differ in ``.unit``)."""
        row = self._populate(res)
        if self.unit_field is None:
            key = self._intern(row)
            return [key] * len(res.values)
        keys = []
        for value in res.values:
            _set(row, self.unit_field.idx, value.unit)
            keys.append(self._intern(row))
        return keys


def _set(row: List[str], idx: int, value: str) -> None:
    while len(row) <= idx:
        row.append("")
    row[idx] = value


def _key_less(flat: Sequence[Field], a: Tuple[str, ...], b: Tuple[str, ...]) -> int:
    for fld in flat:
        x = a[fld.idx] if fld.idx < len(a) else ""
        y = b[fld.idx] if fld.idx < len(b) else ""
        if x != y:
            c = fld.cmp(x, y)
            if c != 0:
                return -1 if c < 0 else 1
            return -1 if x < y else 1
    return 0


def sort_keys(keys: Sequence[Key]) -> List[Key]:
    """Keys sorted by their projection's order."""
    keys = list(keys)
    if not keys:
        return keys
    flat = keys[0].proj.flattened_fields()
    return sorted(keys, key=functools.cmp_to_key(lambda a, b: _key_less(flat, a.vals, b.vals)))


class Filter:
    """A compiled ``-filter`` expression (plus fixed-order projection filters)."""

    def __init__(self, query: str) -> None:
        tree = parse_filter(query)
        self.match_fn: FilterFn = self._compile(query, tree, {})

    def _compile(self, query: str, node, extractors: Dict[str, Extractor]) -> FilterFn:
        if isinstance(node, FilterOp):
            subs = [self._compile(query, sub, extractors) for sub in node.exprs]
            return filter_op(node.op, subs)
        assert isinstance(node, FilterMatch)
        leaf = node
        if leaf.key == ".unit":
            def match_units(res: Result) -> Tuple[Optional[int], bool]:
                mask = 0
                for i, v in enumerate(res.values):
                    if leaf.match(v.unit) or (v.orig_unit != "" and leaf.match(v.orig_unit)):
                        mask |= 1 << i
                return mask, False
            return match_units
        if leaf.key == ".config":
            raise QuerySyntaxError(query, leaf.offset, ".config is only allowed in projections")
        ext = extractors.get(leaf.key)
        if ext is None:
            try:
                ext = _make_extractor(leaf.key)
            except ValueError as err:
                raise QuerySyntaxError(query, leaf.offset, str(err)) from None
            extractors[leaf.key] = ext
        extractor = ext
        return lambda res: (None, leaf.match(extractor(res)))

    def apply(self, res: Result) -> bool:
        """Keep the matching measurements of ``res``; False if none remain."""
        n = len(res.values)
        mask, verdict = self.match_fn(res)
        full = (1 << n) - 1
        if mask is None:
            if verdict:
                return True
            res.values = []
            return False
        mask &= full
        if mask == full:
            return True
        if mask == 0:
            res.values = []
            return False
        res.values = [v for i, v in enumerate(res.values) if mask >> i & 1]
        return True


def filter_op(op: str, subs: List[FilterFn]) -> FilterFn:
    """Combine filter functions with AND, OR or NOT (masks combine bitwise)."""
    if op == OP_NOT:
        sub = subs[0]

        def negate(res: Result) -> Tuple[Optional[int], bool]:
            mask, verdict = sub(res)
            if mask is None:
                return None, not verdict
            return ~mask & ((1 << len(res.values)) - 1), False
        return negate
    if op == OP_AND:
        def conj(res: Result) -> Tuple[Optional[int], bool]:
            mask: Optional[int] = None
            for sub in subs:
                m, verdict = sub(res)
                if m is None:
                    if not verdict:
                        return None, False
                else:
                    mask = m if mask is None else mask & m
            return mask, True
        return conj

    def disj(res: Result) -> Tuple[Optional[int], bool]:
        mask: Optional[int] = None
        for sub in subs:
            m, verdict = sub(res)
            if m is None:
                if verdict:
                    return None, True
            else:
                mask = m if mask is None else mask | m
        return mask, False
    assert op == OP_OR
    return disj


class ProjectionParser:
    """Parses a group of mutually exclusive projections (see module docstring)."""

    def __init__(self) -> None:
        self.config_keys: Set[str] = set()
        self.fullname_keys: List[str] = []
        self.have_config = False
        self.have_fullname = False
        self._full_extractor: Optional[Extractor] = None

    def parse(self, text: str, flt: Optional[Filter]) -> Projection:
        """Parse a projection; fixed orders add their filter to ``flt``."""
        proj = Projection()
        filters: List[FilterFn] = []
        for part in parse_projection(text):
            fn = self._add(proj, text, part)
            if fn is not None:
                filters.append(fn)
        if filters:
            if flt is None:
                raise ValueError("projection %s contains a filter but no Filter was given" % text)
            filters.append(flt.match_fn)
            flt.match_fn = filter_op(OP_AND, filters)
        return proj

    def parse_with_unit(self, text: str, flt: Optional[Filter]) -> Projection:
        """Like :meth:`parse`, plus a trailing ``.unit`` field (first-seen order)."""
        proj = self.parse(text, flt)
        fld = proj.add_field(proj.root, ".unit")
        _observe_first(fld)
        proj.unit_field = fld
        return proj

    def residue(self) -> Projection:
        """The fields no parsed projection covers (``.config``/``.fullname`` rest)."""
        proj = Projection()
        if not self.have_config:
            self._add(proj, "", ProjectionField(".config"))
        if not self.have_fullname:
            self._add(proj, "", ProjectionField(".fullname"))
        return proj

    def _full_name(self, res: Result) -> str:
        if self._full_extractor is None:
            self._full_extractor = _make_fullname_extractor(self.fullname_keys)
        return self._full_extractor(res)

    def _add(self, proj: Projection, query: str, part: ProjectionField) -> Optional[FilterFn]:
        init_field: Callable[[Field], None]
        make_filter: Callable[[Extractor], Optional[FilterFn]] = lambda ext: None
        if part.order == "fixed":
            positions = {value: i for i, value in enumerate(part.fixed)}

            def init_fixed(fld: Field) -> None:
                fld.cmp = lambda a, b: positions.get(a, 0) - positions.get(b, 0)
            init_field = init_fixed

            def fixed_filter(ext: Extractor) -> Optional[FilterFn]:
                return lambda res: (None, ext(res) in positions)
            make_filter = fixed_filter
        elif part.order == "first":
            init_field = _observe_first
        elif part.order in _BUILTIN_ORDERS:
            cmp = _BUILTIN_ORDERS[part.order]

            def init_named(fld: Field) -> None:
                fld.cmp = cmp
            init_field = init_named
        else:
            raise QuerySyntaxError(query, part.order_offset, "unknown order %s" % _quote(part.order))

        if part.key == ".config":
            if part.order == "fixed":
                raise QuerySyntaxError(query, part.order_offset, "fixed order not allowed for .config")
            self.have_config = True
            group = proj.add_group(proj.root, ".config")
            seen: Dict[str, Field] = {}

            def project_config(res: Result, row: List[str]) -> None:
                for entry in res.config:
                    if not entry.file:
                        continue
                    fld = seen.get(entry.key)
                    if fld is None:
                        if entry.key in self.config_keys:
                            continue
                        fld = proj.add_field(group, entry.key)
                        init_field(fld)
                        seen[entry.key] = fld
                    _set(row, fld.idx, entry.value)
            proj.projectors.append(project_config)
            return None

        if part.key == ".fullname":
            self.have_fullname = True
            fld = proj.add_field(proj.root, ".fullname")
            init_field(fld)
            proj.projectors.append(lambda res, row: _set(row, fld.idx, self._full_name(res)))
            return make_filter(_extract_full)

        if part.key == ".unit":
            raise QuerySyntaxError(query, part.key_offset, ".unit is only allowed in filters")

        if part.key == ".name" or part.key.startswith("/"):
            self.fullname_keys.append(part.key)
        else:
            self.config_keys.add(part.key)
        try:
            ext = _make_extractor(part.key)
        except ValueError as err:
            raise QuerySyntaxError(query, part.key_offset, str(err)) from None
        fld = proj.add_field(proj.root, part.key)
        init_field(fld)
        proj.projectors.append(lambda res, row: _set(row, fld.idx, ext(res)))
        return make_filter(ext)


def _observe_first(fld: Field) -> None:
    """Order a field's values by first observation (only top-level fields observe)."""
    order: Dict[str, int] = {}
    fld.order = order
    fld.cmp = lambda a, b: order.get(a, 0) - order.get(b, 0)


def _quote(text: str) -> str:
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


class HeaderNode:
    """A run of adjacent column keys sharing a value at one level of the header."""

    def __init__(self, level: int, value: str, start: int, length: int) -> None:
        self.level = level
        self.value = value
        self.start = start
        self.len = length
        self.children: List[HeaderNode] = []


def key_header(keys: Sequence[Key]) -> List[HeaderNode]:
    """Top-level header nodes merging equal adjacent values, level by level."""
    if not keys:
        return []
    fields = keys[0].proj.flattened_fields()
    root = HeaderNode(-1, "", 0, len(keys))

    def walk(parent: HeaderNode) -> None:
        level = parent.level + 1
        if level == len(fields):
            return
        fld = fields[level]
        node: Optional[HeaderNode] = None
        for j, key in enumerate(keys[parent.start: parent.start + parent.len]):
            val = key.get(fld)
            if node is not None and val == node.value:
                node.len += 1
            else:
                node = HeaderNode(level, val, parent.start + j, 1)
                parent.children.append(node)
        for child in parent.children:
            walk(child)
    walk(root)
    return root.children


def non_singular_fields(keys: Sequence[Key]) -> List[Field]:
    """Fields on which at least two of the keys differ."""
    if len(keys) <= 1:
        return []
    out = []
    for fld in keys[0].proj.flattened_fields():
        base = keys[0].get(fld)
        if any(k.get(fld) != base for k in keys[1:]):
            out.append(fld)
    return out
