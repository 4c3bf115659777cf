"""Parser for benchstat's filter (``-filter``) and projection (``-row`` ...) syntax.

Filters: ``key:value``, ``key:"quoted"``, ``key:/regexp/``,
``key:(a OR b)``, combined by juxtaposition or ``AND``, ``OR``, ``-``
(not), parentheses and ``*``. Projections: keys separated by commas or
spaces, each optionally followed by ``@order`` or ``@(v1 v2 ...)``.

Errors are :class:`QuerySyntaxError`, whose text matches the
reference tool (message, the query, and a caret under the offset).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Pattern, Tuple, Union

from .textutil import is_go_graphic, is_go_space

__all__ = [
    "QuerySyntaxError",
    "FilterMatch",
    "FilterOp",
    "ProjectionField",
    "parse_filter",
    "parse_projection",
    "OP_AND",
    "OP_OR",
    "OP_NOT",
]

OP_AND, OP_OR, OP_NOT = "AND", "OR", "NOT"


class QuerySyntaxError(Exception):
    """A syntax error at a character offset of a query."""

    def __init__(self, query: str, offset: int, msg: str) -> None:
        super().__init__(msg)
        self.query = query
        self.offset = offset
        self.msg = msg

    def __str__(self) -> str:
        pos = sum(1 for ch in self.query[: self.offset] if is_go_graphic(ch))
        return "syntax error: %s\n\t%s\n\t%s^" % (self.msg, self.query, " " * pos)


@dataclass
class FilterMatch:
    """``key:value`` (literal) or ``key:/regexp/`` leaf of a filter."""

    key: str
    regexp: Optional[Pattern[str]]
    literal: str
    offset: int

    def match(self, value: str) -> bool:
        if self.regexp is not None:
            return self.regexp.search(value) is not None
        return self.literal == value


@dataclass
class FilterOp:
    """AND / OR / NOT over sub-filters (AND of nothing is ``*``)."""

    op: str
    exprs: List["Filter"] = field(default_factory=list)


Filter = Union[FilterMatch, FilterOp]


@dataclass
class ProjectionField:
    """One key of a projection and its sort order."""

    key: str
    order: str = "first"  # "first", "fixed", or a named order
    fixed: List[str] = field(default_factory=list)
    key_offset: int = 0
    order_offset: int = 0


@dataclass
class _Tok:
    kind: str  # 'w' word, 'q' quoted, 'r' regexp, 'A', 'O', an op char, or '' for end
    offset: int
    text: str
    regexp: Optional[Pattern[str]] = None


class _ErrorTracker:
    def __init__(self, query: str) -> None:
        self.query = query
        self.error: Optional[QuerySyntaxError] = None

    def record(self, pos: int, msg: str) -> None:
        if self.error is None:
            self.error = QuerySyntaxError(self.query, pos, msg)


def _is_op(ch: str) -> bool:
    return ch in "():@,"


def _is_start_op(ch: str) -> bool:
    return _is_op(ch) or ch in "-*"


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
            "v": "\v", "\\": "\\", '"': '"'}


def _go_unquote(body: str) -> str:
    """Unescape the inside of a Go double-quoted string literal."""
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\n" or ch == '"':
            raise ValueError("bad quote")
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= len(body):
            raise ValueError("trailing backslash")
        esc = body[i]
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            i += 1
        elif esc in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[esc]
            digits = body[i + 1: i + 1 + width]
            if len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise ValueError("bad hex escape")
            code = int(digits, 16)
            if esc != "x" and (code > 0x10FFFF or 0xD800 <= code < 0xE000):
                raise ValueError("bad code point")
            out.append(chr(code))
            i += 1 + width
        elif esc in "01234567":
            digits = body[i: i + 3]
            if len(digits) != 3 or not re.fullmatch(r"[0-7]{3}", digits) or int(digits, 8) > 255:
                raise ValueError("bad octal escape")
            out.append(chr(int(digits, 8)))
            i += 3
        else:
            raise ValueError("unknown escape")
    return "".join(out)


def _regexp_parse_until(text: str, delim: str) -> Tuple[str, Optional[str]]:
    """Split a regexp at an unbracketed, unescaped delimiter."""
    brackets = 0
    parens = 0
    i = 0
    while i < len(text):
        if brackets == 0 and parens == 0 and text.startswith(delim, i):
            return text[:i], text[i:]
        ch = text[i]
        if ch == "[":
            brackets += 1
        elif ch == "]":
            brackets = max(brackets - 1, 0)
        elif ch == "(" and brackets == 0:
            parens += 1
        elif ch == ")" and brackets == 0:
            parens -= 1
        elif ch == "\\":
            i += 1
        i += 1
    return text, None


class _Tokenizer:
    """Cursor over a query; methods return new cursors (all share one error tracker)."""

    def __init__(self, query: str, pos: int, errors: _ErrorTracker) -> None:
        self.query = query
        self.pos = pos
        self.errors = errors

    def _at(self, pos: int) -> "_Tokenizer":
        return _Tokenizer(self.query, pos, self.errors)

    def _tok(self, kind: str, start: int, end: int, text: Optional[str] = None) -> Tuple[_Tok, "_Tokenizer"]:
        return _Tok(kind, start, self.query[start:end] if text is None else text), self._at(end)

    def error(self, msg: str) -> Tuple[_Tok, "_Tokenizer"]:
        self.errors.record(self.pos, msg)
        end = len(self.query)
        return _Tok("", end, ""), self._at(end)

    def key_or_op(self) -> Tuple[_Tok, "_Tokenizer"]:
        return self._next(False)

    def value_or_op(self) -> Tuple[_Tok, "_Tokenizer"]:
        return self._next(True)

    def end(self) -> "_Tokenizer":
        tok, _ = self.key_or_op()
        if tok.kind != "":
            return self.error("unexpected " + _go_quote(tok.text))[1]
        return self

    def _next(self, allow_regexp: bool) -> Tuple[_Tok, "_Tokenizer"]:
        # Like the reference, peeking consumes leading white space from
        # this cursor itself, which moves the offsets of later errors.
        q = self.query
        while self.pos < len(q) and is_go_space(q[self.pos]) and not _is_start_op(q[self.pos]):
            self.pos += 1
        pos = self.pos
        while pos < len(q):
            ch = q[pos]
            if _is_start_op(ch):
                return self._at(pos)._tok(ch, pos, pos + 1)
            cur = self._at(pos)
            if allow_regexp and ch == "/":
                return cur._regexp()
            if ch == '"':
                return cur._quoted_word()
            return cur._bare_word()
        return self._at(len(q))._tok("", len(q), len(q))

    def _quoted_word(self) -> Tuple[_Tok, "_Tokenizer"]:
        q = self.query
        start = self.pos
        i = start + 1
        while i < len(q) and (q[i] != '"' or q[i - 1] == "\\"):
            i += 1
        if i == len(q):
            return self.error("missing end quote")
        try:
            word = _go_unquote(q[start + 1: i])
        except ValueError:
            return self.error("bad escape sequence")
        return self._tok("q", start, i + 1, word)

    def _bare_word(self) -> Tuple[_Tok, "_Tokenizer"]:
        q = self.query
        start = self.pos
        end = start
        while end < len(q) and not (is_go_space(q[end]) or _is_op(q[end])):
            end += 1
        word = q[start:end]
        kind = {"AND": "A", "OR": "O"}.get(word, "w")
        return self._tok(kind, start, end)

    def _regexp(self) -> Tuple[_Tok, "_Tokenizer"]:
        q = self.query
        start = self.pos
        expr, rest = _regexp_parse_until(q[start + 1:], "/")
        if rest is None:
            return self.error('missing close "/"')
        try:
            compiled = re.compile(expr)
        except re.error as err:
            return self.error("error parsing regexp: %s: `%s`" % (err.msg, expr))
        after = start + 1 + len(expr) + 1
        if not (after == len(q) or is_go_space(q[after]) or _is_start_op(q[after])):
            return self._at(after).error(
                'regexp must be followed by space or an operator (unescaped "/"?)')
        tok, nxt = self._tok("r", start, after, expr)
        tok.regexp = compiled
        return tok, nxt


def _go_quote(text: str) -> str:
    """Go ``strconv.Quote`` for the ASCII-ish tokens that appear in errors."""
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("\\u%04x" % ord(ch) if ord(ch) < 0x10000 else "\\U%08x" % ord(ch))
    out.append('"')
    return "".join(out)


class _FilterParser:
    def expr(self, toks: _Tokenizer) -> Tuple[Optional[Filter], _Tokenizer]:
        terms: List[Filter] = []
        while True:
            q, toks = self.and_expr(toks)
            terms.append(q)
            op, after = toks.key_or_op()
            if op.kind != "O":
                break
            toks = after
        if len(terms) == 1:
            return terms[0], toks
        return FilterOp(OP_OR, terms), toks

    def and_expr(self, toks: _Tokenizer) -> Tuple[Optional[Filter], _Tokenizer]:
        q, toks = self.match(toks)
        terms = [q]
        while True:
            op, after = toks.key_or_op()
            if op.kind == "A":
                toks = after
                continue
            if op.kind in ("(", "-", "*", "w", "q"):
                q, toks = self.match(toks)
                terms.append(q)
            elif op.kind in (")", "O", ""):
                break
            else:
                return None, toks.error("unexpected " + _go_quote(op.text))[1]
        if len(terms) == 1:
            return terms[0], toks
        return FilterOp(OP_AND, terms), toks

    def match(self, start: _Tokenizer) -> Tuple[Optional[Filter], _Tokenizer]:
        tok, rest = start.key_or_op()
        if tok.kind == "(":
            q, rest = self.expr(rest)
            op, after = rest.key_or_op()
            if op.kind != ")":
                return None, rest.error('missing ")"')[1]
            return q, after
        if tok.kind == "-":
            q, rest = self.match(rest)
            return FilterOp(OP_NOT, [q]), rest
        if tok.kind == "*":
            return FilterOp(OP_AND, []), rest
        if tok.kind in ("w", "q"):
            key = tok.text
            op, after = rest.key_or_op()
            if op.kind != ":":
                return None, start.error("expected key:value")[1]
            rest = after
            val, rest = rest.value_or_op()
            if val.kind in ("w", "q", "r"):
                return self.make_match(tok.offset, key, val), rest
            if val.kind != "(":
                return None, start.error("expected key:value")[1]
            terms: List[Filter] = []
            while True:
                val, after = rest.value_or_op()
                if val.kind not in ("w", "q", "r"):
                    return None, rest.error("expected value")[1]
                terms.append(self.make_match(tok.offset, key, val))
                rest = after
                sep, after = rest.value_or_op()
                if sep.kind == ")":
                    return FilterOp(OP_OR, terms), after
                if sep.kind != "O":
                    return None, rest.error("value list must be separated by OR")[1]
                rest = after
        return None, start.error("expected key:value or subexpression")[1]

    @staticmethod
    def make_match(offset: int, key: str, val: _Tok) -> FilterMatch:
        if val.kind == "r":
            return FilterMatch(key, val.regexp, "", offset)
        return FilterMatch(key, None, val.text, offset)


def parse_filter(query: str) -> Filter:
    """Parse a ``-filter`` expression; raises :class:`QuerySyntaxError`."""
    errors = _ErrorTracker(query)
    toks = _Tokenizer(query, 0, errors)
    result, toks = _FilterParser().expr(toks)
    toks.end()
    if errors.error is not None:
        raise errors.error
    assert result is not None
    return result


def _parse_projection_field(toks: _Tokenizer) -> Tuple[ProjectionField, _Tokenizer]:
    key, after = toks.key_or_op()
    if key.kind not in ("w", "q"):
        return ProjectionField(""), toks.error("expected key")[1]
    toks = after
    fld = ProjectionField(key.text, key_offset=key.offset, order_offset=key.offset + len(key.text))
    sep, after = toks.key_or_op()
    if sep.kind != "@":
        return fld, toks
    toks = after
    order, after = toks.key_or_op()
    fld.order_offset = order.offset
    if order.kind in ("w", "q"):
        fld.order = order.text
        return fld, after
    if order.kind == "(":
        fld.order = "fixed"
        toks = after
        while True:
            tok, after = toks.key_or_op()
            if tok.kind in ("w", "q"):
                toks = after
                fld.fixed.append(tok.text)
            elif tok.kind == ")":
                if not fld.fixed:
                    toks = toks.error("nothing to match")[1]
                else:
                    toks = after
                break
            else:
                toks = toks.error("missing )")[1]
                break
        return fld, toks
    return fld, toks.error("expected named sort order or parenthesized list")[1]


def parse_projection(query: str) -> List[ProjectionField]:
    """Parse a projection such as ``.name,/size@num``."""
    errors = _ErrorTracker(query)
    toks = _Tokenizer(query, 0, errors)
    fields: List[ProjectionField] = []
    while True:
        tok, after = toks.key_or_op()
        if tok.kind == "":
            break
        if tok.kind == "," and fields:
            toks = after
        fld, toks = _parse_projection_field(toks)
        fields.append(fld)
    toks.end()
    if errors.error is not None:
        raise errors.error
    return fields
