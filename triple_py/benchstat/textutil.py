"""Character classes with Go's ``unicode`` semantics (they differ from str methods)."""

from __future__ import annotations

import unicodedata

__all__ = ["is_go_space", "is_go_lower", "is_go_upper", "is_go_graphic", "split_field"]

# unicode.IsSpace: Latin-1 spaces plus the White_Space property.
_GO_SPACES = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def is_go_space(ch: str) -> bool:
    """Go's ``unicode.IsSpace`` for one character."""
    return ch in _GO_SPACES


def is_go_lower(ch: str) -> bool:
    """Go's ``unicode.IsLower`` (general category Ll)."""
    return unicodedata.category(ch) == "Ll"


def is_go_upper(ch: str) -> bool:
    """Go's ``unicode.IsUpper`` (general category Lu)."""
    return unicodedata.category(ch) == "Lu"


def is_go_graphic(ch: str) -> bool:
    """Go's ``unicode.IsGraphic``: letters, marks, numbers, punctuation, symbols, Zs."""
    return unicodedata.category(ch)[0] in "LMNPS" or unicodedata.category(ch) == "Zs"


def split_field(text: str):
    """Split off the first whitespace-delimited field; return (field, rest).

    Like benchfmt's ``splitField``: the field ends at the first space;
    the spaces after it are consumed.
    """
    i = 0
    n = len(text)
    while i < n and text[i] not in _GO_SPACES:
        i += 1
    field = text[:i]
    while i < n and text[i] in _GO_SPACES:
        i += 1
    return field, text[i:]
