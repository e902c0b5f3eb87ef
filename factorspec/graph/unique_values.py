"""JSON value equality for uniqueItems kept in the text (textstate.py 'U' tasks).

Items are compared as VALUES, not texts: an open object's members (and an any-value object's) may
come in any order, so one value has several texts. `item_value` is an item's value in a hashable
normal form (objects as frozen member sets, numbers as exact Fractions, booleans tagged so that
`true` never equals `1`, as in `jsonschema`). `could_equal(text, value)` answers, for an item's
text so far, whether some completion of it may still be that value; it is exact in the direction
that matters (False only when no completion can be), and True only while the text is a prefix of
some text of the value (so a search that follows True answers is bounded by the value's length).

Number prefixes are compared with the value's canonical text (`format_decimal`): the automaton
only ever completes a number in that form inside such items (no exponent, no trailing zeros),
so a prefix that is not one of the canonical text's can never end as that value.
"""
from __future__ import annotations

import json
from collections.abc import Hashable
from fractions import Fraction
from functools import lru_cache
from typing import Any, Union

from factorspec.graph.relations import format_decimal

_WS = frozenset(b" \t\n\r")
_NUM = frozenset(b"-+.eE0123456789")
_SHORT = {ord('"'): '"', ord("\\"): "\\", ord("/"): "/", ord("b"): "\b", ord("f"): "\f", ord("n"): "\n",
          ord("r"): "\r", ord("t"): "\t"}


def normal(v: Any) -> Hashable:
    """A parsed JSON value (numbers as Fractions) in hashable normal form: equal iff JSON-equal."""
    if isinstance(v, dict):
        return ("o", frozenset((k, normal(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("a", tuple(normal(x) for x in v))
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return Fraction(str(v))
    return v  # str, None, Fraction


@lru_cache(maxsize=65536)
def item_value(raw: bytes) -> Hashable:
    """The value of a complete item text, in normal form (numbers exact, never floats)."""
    return normal(json.loads(raw, parse_float=Fraction, parse_int=Fraction))


def could_equal(raw: bytes, value: Hashable) -> bool:
    """Can some completion of the item text `raw` (a prefix the automaton wrote) be `value`?"""
    try:
        r = _match(raw, 0, value)
    except (ValueError, UnicodeDecodeError):  # not a text the automaton writes: say "maybe"
        return True
    if isinstance(r, bool):
        return r
    return _ws(raw, r) == len(raw)


def _ws(p: bytes, i: int) -> int:
    while i < len(p) and p[i] in _WS:
        i += 1
    return i


Match = Union[bool, int]  # True: the text ended inside the value; False: it differs; int: index after


def _match(p: bytes, i: int, s: Hashable) -> Match:
    i = _ws(p, i)
    if i == len(p):
        return True
    c = p[i]
    if isinstance(s, tuple):
        if s[0] == "o":
            return _match_object(p, i, dict(s[1])) if c == 0x7B else False
        if s[0] == "a":
            return _match_array(p, i, s[1]) if c == 0x5B else False
        return _literal(p, i, b"true" if s[1] else b"false")
    if s is None:
        return _literal(p, i, b"null")
    if isinstance(s, str):
        if c != 0x22:
            return False
        done, val, j = _string(p, i)
        if not done:
            return _partial_string_ok(val, j, s)
        return j if val == s else False
    assert isinstance(s, Fraction)
    if c not in _NUM:
        return False
    j = i
    while j < len(p) and p[j] in _NUM:
        j += 1
    tok = p[i:j]
    if j == len(p):  # the number may still go on
        return format_decimal(s if s.denominator != 1 else s.numerator).encode().startswith(tok)
    try:
        return j if Fraction(tok.decode()) == s else False
    except ValueError:
        return False


def _literal(p: bytes, i: int, lit: bytes) -> Match:
    got = p[i:i + len(lit)]
    if len(got) < len(lit):
        return lit.startswith(got)
    return i + len(lit) if got == lit else False


def _match_object(p: bytes, i: int, members: dict) -> Match:
    used: set = set()
    i += 1
    while True:
        i = _ws(p, i)
        if i == len(p):
            return True
        if p[i] == 0x7D:
            return i + 1 if len(used) == len(members) else False
        if used:
            if p[i] != 0x2C or len(used) == len(members):
                return False
            i = _ws(p, i + 1)
            if i == len(p):
                return True
        if p[i] != 0x22:
            return False
        done, key, j = _string(p, i)
        if not done:
            return any(k not in used and _partial_string_ok(key, j, k) for k in members)
        if key not in members or key in used:
            return False
        used.add(key)
        i = _ws(p, j)
        if i == len(p):
            return True
        if p[i] != 0x3A:
            return False
        r = _match(p, i + 1, members[key])
        if isinstance(r, bool):
            return r
        i = r


def _match_array(p: bytes, i: int, items: tuple) -> Match:
    i += 1
    k = 0
    while True:
        i = _ws(p, i)
        if i == len(p):
            return True
        if p[i] == 0x5D:
            return i + 1 if k == len(items) else False
        if k == len(items):
            return False
        if k:
            if p[i] != 0x2C:
                return False
            i = _ws(p, i + 1)
            if i == len(p):
                return True
        r = _match(p, i, items[k])
        if isinstance(r, bool):
            return r
        i = r
        k += 1


def _partial_string_ok(got: str, pending: Any, s: str) -> bool:
    """An unfinished string: its decoded characters so far and, when a character is under way,
    what it can still become (`_string`): can it still be `s`?"""
    if not s.startswith(got):
        return False
    if pending is None:
        return True
    if len(s) == len(got):
        return False
    c = s[len(got)]
    if pending[0] == "utf8":
        return c.encode("utf-8").startswith(pending[1])
    return pending[1] <= ord(c) <= pending[2]  # an escape: any of these code points


def _string(p: bytes, i: int) -> tuple[bool, str, Any]:
    """The JSON string at p[i] (a quote): (True, value, index after) when it ends in `p`, else
    (False, decoded characters so far, the character under way: None, ("utf8", its bytes so far)
    or ("esc", lowest, highest code point the escape can still write))."""
    j = i + 1
    start = j
    while j < len(p):
        b = p[j]
        if b == 0x22:
            return True, json.loads(p[i:j + 1]), j + 1
        j += 2 if b == 0x5C else 1
    # unfinished: decode what is complete
    out: list[str] = []
    j = start
    while j < len(p):
        b = p[j]
        if b == 0x5C:
            if j + 1 >= len(p):
                return False, "".join(out), ("esc", 0, 0xFFFF)  # a short escape or \u: a BMP character
            e = p[j + 1]
            if e == ord("u"):
                if j + 6 > len(p):
                    digits = p[j + 2:]
                    width = 16 ** (4 - len(digits))
                    v = int(digits, 16) * width if digits else 0
                    return False, "".join(out), ("esc", v, v + width - 1)
                cp = int(p[j + 2:j + 6], 16)
                if 0xD800 <= cp <= 0xDFFF:  # a surrogate pair (never written in such items): say "maybe"
                    return False, "".join(out[:0]), None
                out.append(chr(cp))
                j += 6
            else:
                out.append(_SHORT[e])
                j += 2
        elif b < 0x80:
            out.append(chr(b))
            j += 1
        else:
            n = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            if j + n > len(p):
                return False, "".join(out), ("utf8", p[j:])
            out.append(p[j:j + n].decode("utf-8"))
            j += n
    return False, "".join(out), None


def string_texts(value: Hashable) -> set[bytes]:
    """The canonical body texts (json.dumps, no quotes) of every string and key inside `value`:
    a plain token can keep an item on `value` only by spelling the rest of one of them."""
    out: set[bytes] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            out.add(json.dumps(v, ensure_ascii=False).encode()[1:-1])
        elif isinstance(v, tuple) and v[0] == "o":
            for k, x in v[1]:
                out.add(json.dumps(k, ensure_ascii=False).encode()[1:-1])
                todo.append(x)
        elif isinstance(v, tuple) and v[0] == "a":
            todo.extend(v[1])
    return out
