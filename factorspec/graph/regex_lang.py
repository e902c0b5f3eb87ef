"""Regular languages of strings for `pattern`, `patternProperties` and `propertyNames`: an
ECMA-262 regex subset -> NFA -> DFA over character classes, intersected exactly with length bounds.

Why our own engine: the text machine needs, at every byte, "can this prefix still be completed to a
string of the language within the length bounds?" (no dead ends), and masks need DFA states to
group tokens. That is a small amount of code over a DFA whose alphabet is a partition of the code
points into classes, and it lets the semantics be chosen exactly:

- JSON Schema's `pattern` is an unanchored search: the language is .* P .* with `^`/`$` as
  assertions (ECMA-262: `$` only at the very end, no trailing-newline exception).
- Where ECMA-262 and Python's `re` (which the `jsonschema` validator uses) disagree on a class, the
  intersection of the two is compiled, so every string allowed is valid under both: `\\d` = [0-9],
  `\\w` = [A-Za-z0-9_], `\\s` the spaces both call white space, `\\D`/`\\W`/`\\S` and negated classes
  the complement of the union, `.` excludes \\n, \\r, U+2028 and U+2029 (a documented narrowing).
- Lone surrogates (U+D800-U+DFFF) are not characters here: no string holds one.
- Lookaheads right after a leading `^` (`^(?!X)R`, common in schemas) are intersections with the
  (complement of the) strings that have a prefix matching X.
- Lookaheads anywhere else and word boundaries `\\b`/`\\B` are obligations carried by the threads
  of the subset construction (`_asserting_dfa`): exact, a regular language. A boundary must hold
  under both readings of `\\w` at its position (a narrowing where they differ: non-ASCII letters).
- Refused with a `SpecError` naming the pattern's pointer: lookbehind, a lookahead, `^` or `\\b`
  inside a lookahead, backreferences, `\\p{...}`, `\\cX`, unknown letter escapes, `{` that is not
  a quantifier, empty classes.
Budgets are explicit: MAX_NFA_STATES, MAX_DFA_STATES, MAX_REPEAT.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from factorspec.errors import SpecError

MAX_REPEAT = 1000  # the largest count of a {n,m} quantifier
MAX_NFA_STATES = 50_000
MAX_DFA_STATES = 12_000  # per pattern (before minimizing), and per product of key patterns
MAX_LAYERS = 50_000  # length layers of the length analysis
TOP = 0x110000
SURR = (0xD800, 0xDFFF)

Iv = tuple[tuple[int, int], ...]  # a set of code points: sorted disjoint inclusive intervals


def _intern(index: dict, order: list, state: Any, ptr: str, src: str) -> int:
    """The DFA number of a subset-construction state, numbering a new one within MAX_DFA_STATES."""
    j = index.get(state)
    if j is None:
        if len(order) >= MAX_DFA_STATES:
            raise SpecError(ptr, f"pattern {src[:80]!r}: its automaton exceeds {MAX_DFA_STATES} DFA states (budget)")
        j = index[state] = len(order)
        order.append(state)
    return j


def _norm(ivs: Sequence[tuple[int, int]]) -> Iv:
    out: list[list[int]] = []
    for lo, hi in sorted(ivs):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


UNIVERSE: Iv = ((0, SURR[0] - 1), (SURR[1] + 1, TOP - 1))


def _complement(s: Iv) -> Iv:
    out, at = [], 0
    for lo, hi in s:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at < TOP:
        out.append((at, TOP - 1))
    return _intersect(_norm(out), UNIVERSE)


def _intersect(a: Iv, b: Iv) -> Iv:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _union(a: Iv, b: Iv) -> Iv:
    return _norm(list(a) + list(b))


_PY: dict[str, Iv] = {}


def _python_class(name: str) -> Iv:
    """Python's `re` (str patterns) \\d, \\w or \\s as intervals (computed once, on demand)."""
    hit = _PY.get(name)
    if hit is None:
        text = "".join(chr(c) for lo, hi in UNIVERSE for c in range(lo, hi + 1))
        ivs = []
        for m in re.finditer(f"\\{name}+", text):
            ivs.append((ord(text[m.start()]), ord(text[m.end() - 1])))
        # finditer runs are contiguous in `text`; text is in code point order except for the gap
        hit = _PY[name] = _norm(_split_runs(ivs))
    return hit


def _split_runs(ivs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for lo, hi in ivs:
        if lo < SURR[0] <= hi:
            out += [(lo, SURR[0] - 1), (SURR[1] + 1, hi)]
        else:
            out.append((lo, hi))
    return out


_ECMA_SPACE: Iv = _norm([(9, 13), (32, 32), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
                         (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)])
_ECMA = {"d": _norm([(48, 57)]), "w": _norm([(48, 57), (65, 90), (95, 95), (97, 122)]), "s": _ECMA_SPACE}


@dataclass(frozen=True)
class CharSet:
    """A class as ECMA-262 reads it and as Python reads it; the compiled set is their intersection."""

    ecma: Iv
    py: Iv

    def negate(self) -> CharSet:
        return CharSet(_complement(self.ecma), _complement(self.py))

    def union(self, o: CharSet) -> CharSet:
        return CharSet(_union(self.ecma, o.ecma), _union(self.py, o.py))

    @property
    def effective(self) -> Iv:
        return _intersect(_intersect(self.ecma, self.py), UNIVERSE)

    @property
    def wide(self) -> Iv:
        """Either reading (inside a negative lookahead: its complement is then in both)."""
        return _intersect(_union(self.ecma, self.py), UNIVERSE)


def _lit(c: int) -> CharSet:
    s = ((c, c),)
    return CharSet(s, s)


def _esc_class(letter: str) -> CharSet:
    low = letter.lower()
    cs = CharSet(_ECMA[low], _python_class(low))
    return cs.negate() if letter.isupper() else cs


_DOT = CharSet(_complement(_norm([(10, 10), (13, 13), (0x2028, 0x2029)])), _complement(((10, 10),)))
_SHORT = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}


# -- parser: pattern text -> AST --------------------------------------------------------------------
# AST: ("set", CharSet) | ("cat", [ast]) | ("alt", [ast]) | ("rep", ast, lo, hi|None) | ("bol",) | ("eol",)

class _Parser:
    def __init__(self, src: str, ptr: str, in_look: bool = False) -> None:
        self.s, self.i, self.ptr = src, 0, ptr
        self.in_look = in_look  # the body of a lookahead: no '^', '\\b' or nested lookahead

    def err(self, msg: str) -> SpecError:
        return SpecError(self.ptr, f"pattern {self.s[:80]!r}: {msg} (at offset {self.i})")

    def peek(self) -> Optional[str]:
        return self.s[self.i] if self.i < len(self.s) else None

    def parse(self) -> Any:
        node = self.alt()
        if self.i < len(self.s):
            raise self.err("unbalanced ')'")
        return node

    def alt(self) -> Any:
        parts = [self.cat()]
        while self.peek() == "|":
            self.i += 1
            parts.append(self.cat())
        return parts[0] if len(parts) == 1 else ("alt", parts)

    def cat(self) -> Any:
        items: list[Any] = []
        while self.i < len(self.s) and self.s[self.i] not in "|)":
            atom = self.atom()
            items.append(self.quant(atom))
        return ("cat", items)

    def quant(self, atom: Any) -> Any:
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            elif c == "{":
                m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.s, self.i)
                if not m:
                    raise self.err("'{' that is not a quantifier {n}, {n,} or {n,m} (escape it as '\\{')")
                lo = int(m.group(1))
                hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                if lo > MAX_REPEAT or (hi is not None and hi > MAX_REPEAT):
                    raise self.err(f"a repeat count above {MAX_REPEAT} is not supported")
                if hi is not None and hi < lo:
                    raise self.err("quantifier {n,m} with m < n")
                self.i = m.end()
            else:
                return atom
            if atom[0] in ("bol", "eol", "look", "wordb"):
                raise self.err("a quantifier after an anchor or assertion")
            if self.peek() == "?":  # lazy: the same language
                self.i += 1
            if self.peek() in ("*", "+", "?", "{"):
                if self.peek() != "{" or re.compile(r"\{\d").match(self.s, self.i):
                    raise self.err("a quantifier after a quantifier (possessive or nested) is not supported")
            atom = ("rep", atom, lo, hi)

    def atom(self) -> Any:
        c = self.s[self.i]
        self.i += 1
        if c == "(":
            if self.s.startswith("?:", self.i):
                self.i += 2
            elif self.s.startswith("?<", self.i) and not self.s.startswith(("?<=", "?<!"), self.i):
                m = re.compile(r"\?<([A-Za-z_$][\w$]*)>").match(self.s, self.i)
                if not m:
                    raise self.err("a malformed named group")
                self.i = m.end()
            elif self.s.startswith(("?=", "?!"), self.i):
                if self.in_look:
                    raise self.err("a lookahead inside a lookahead is not supported")
                self.i += 2
                at = self.i
                self.alt()
                if self.peek() != ")":
                    raise self.err("missing ')'")
                body = self.s[at:self.i]
                self.i += 1
                return ("look", body, self.s[at - 1] == "=")
            elif self.s.startswith(("?<=", "?<!"), self.i):
                raise self.err("lookbehind assertions are not supported")
            elif self.peek() == "?":
                raise self.err("'(?...)' groups other than '(?:', named groups and lookaheads are not supported")
            node = self.alt()
            if self.peek() != ")":
                raise self.err("missing ')'")
            self.i += 1
            return node
        if c == ")":
            raise self.err("unbalanced ')'")
        if c in "*+?":
            raise self.err(f"nothing to repeat before {c!r}")
        if c == "{" and re.compile(r"\{\d+(,\d*)?\}").match(self.s, self.i - 1):
            raise self.err("nothing to repeat before a quantifier")
        if c == "{":
            raise self.err("'{' that is not a quantifier {n}, {n,} or {n,m} (escape it as '\\{')")
        if c == "^":
            if self.in_look:
                raise self.err("'^' inside a lookahead is not supported")
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == ".":
            return ("set", _DOT)
        if c == "[":
            return ("set", self.klass())
        if c == "\\":
            return self.escape(in_class=False)
        return ("set", _lit(ord(c)))

    def escape(self, in_class: bool) -> Any:
        if self.i >= len(self.s):
            raise self.err("a pattern ending in '\\'")
        c = self.s[self.i]
        self.i += 1
        if c in "dDwWsS":
            return ("set", _esc_class(c))
        if c in _SHORT:
            return ("set", _lit(_SHORT[c]))
        if c == "b" and in_class:
            return ("set", _lit(8))
        if c in "bB":
            if self.in_look:
                raise self.err("a word-boundary assertion (\\b, \\B) inside a lookahead is not supported")
            return ("wordb", c == "b")
        if c == "0" and not (self.peek() or "").isdigit():
            return ("set", _lit(0))
        if c.isdigit():
            raise self.err("backreferences are not supported (no regular language)")
        if c == "x":
            m = re.compile(r"[0-9A-Fa-f]{2}").match(self.s, self.i)
            if not m:
                raise self.err("'\\x' needs two hex digits")
            self.i = m.end()
            return ("set", _lit(int(m.group(), 16)))
        if c == "u":
            m = re.compile(r"[0-9A-Fa-f]{4}").match(self.s, self.i)
            if not m:
                raise self.err("'\\u' needs four hex digits ('\\u{...}' is not supported)")
            self.i = m.end()
            cp = int(m.group(), 16)
            if SURR[0] <= cp <= SURR[1]:
                raise self.err("surrogate escapes are not supported")
            return ("set", _lit(cp))
        if c in "pP":
            raise self.err("Unicode property escapes (\\p{...}) are not supported")
        if c == "c":
            raise self.err("control escapes (\\cX) are not supported")
        if c == "k":
            raise self.err("named backreferences are not supported (no regular language)")
        if c.isalnum():
            raise self.err(f"unknown escape '\\{c}' (ECMA-262 and Python read it differently)")
        return ("set", _lit(ord(c)))

    def klass(self) -> CharSet:
        neg = self.peek() == "^"
        if neg:
            self.i += 1
        if self.peek() == "]":
            raise self.err("an empty class '[]' or '[^]' is not supported (ECMA-262 and Python read it differently)")
        acc = CharSet((), ())
        while True:
            c = self.peek()
            if c is None:
                raise self.err("missing ']'")
            if c == "]":
                self.i += 1
                break
            if c == "[" and self.s.startswith(("[:", "[=", "[."), self.i):
                raise self.err("POSIX classes inside '[...]' are not supported")
            lo = self.class_atom()
            if self.peek() == "-" and self.i + 1 < len(self.s) and self.s[self.i + 1] != "]":
                self.i += 1
                hi = self.class_atom()
                a, b = _single(lo), _single(hi)
                if a is None or b is None:
                    raise self.err("a class escape (\\d, \\w, \\s) as a range end")
                if b < a:
                    raise self.err("a class range out of order")
                acc = acc.union(CharSet(((a, b),), ((a, b),)))
            else:
                acc = acc.union(lo)
        return acc.negate() if neg else acc

    def class_atom(self) -> CharSet:
        c = self.s[self.i]
        self.i += 1
        if c == "\\":
            node = self.escape(in_class=True)
            cs: CharSet = node[1]
            return cs
        return _lit(ord(c))


def _single(cs: CharSet) -> Optional[int]:
    if len(cs.ecma) == 1 and cs.ecma == cs.py and cs.ecma[0][0] == cs.ecma[0][1]:
        return cs.ecma[0][0]
    return None


# -- NFA ------------------------------------------------------------------------------------------

class _Nfa:
    """Thompson NFA: eps[s] targets, chars[s] (Iv, target) edges, anchors[s] ('^'|'$', target)."""

    def __init__(self, ptr: str, wide: bool = False) -> None:
        self.wide = wide
        self.eps: list[list[int]] = []
        self.chars: list[list[tuple[Iv, int]]] = []
        self.anchors: list[list[tuple[str, int]]] = []
        self.looks: list[tuple[str, bool]] = []  # lookahead bodies (source) and polarity
        self.ptr = ptr

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA_STATES:
            raise SpecError(self.ptr, f"the pattern's automaton exceeds {MAX_NFA_STATES} NFA states (budget)")
        self.eps.append([])
        self.chars.append([])
        self.anchors.append([])
        return len(self.eps) - 1

    def build(self, node: Any) -> tuple[int, int]:
        kind = node[0]
        s = self.new()
        if kind == "set":
            e = self.new()
            iv = node[1].wide if self.wide else node[1].effective
            if iv:
                self.chars[s].append((iv, e))
            return s, e
        if kind == "eol" and self.wide:  # Python's `$` too: at the end or before a final newline
            m, e = self.new(), self.new()
            self.chars[s].append((((10, 10),), m))
            self.eps[s].append(m)
            self.anchors[m].append(("$", e))
            return s, e
        if kind in ("bol", "eol"):
            e = self.new()
            self.anchors[s].append(("^" if kind == "bol" else "$", e))
            return s, e
        if kind == "look":  # ("look", body, positive): obligation number len(self.looks)
            e = self.new()
            self.anchors[s].append((f"L{len(self.looks)}", e))
            self.looks.append((node[1], node[2]))
            return s, e
        if kind == "wordb":
            e = self.new()
            self.anchors[s].append(("b" if node[1] else "B", e))
            return s, e
        if kind == "cat":
            cur = s
            for x in node[1]:
                a, b = self.build(x)
                self.eps[cur].append(a)
                cur = b
            return s, cur
        if kind == "alt":
            e = self.new()
            for x in node[1]:
                a, b = self.build(x)
                self.eps[s].append(a)
                self.eps[b].append(e)
            return s, e
        assert kind == "rep"
        _, sub, lo, hi = node
        cur = s
        for _ in range(lo):
            a, b = self.build(sub)
            self.eps[cur].append(a)
            cur = b
        if hi is None:
            a, b = self.build(sub)
            e = self.new()
            self.eps[cur] += [a, e]
            self.eps[b] += [a, e]
            return s, e
        e = self.new()
        for _ in range(hi - lo):
            a, b = self.build(sub)
            self.eps[cur] += [a, e]
            cur = b
        self.eps[cur].append(e)
        return s, e


# -- DFA over character classes -------------------------------------------------------------------

@dataclass(eq=False)
class Dfa:
    """Complete DFA: class c holds the code points [starts[c], starts[c+1]); trans[q][c] is the next
    state (-1: none, e.g. surrogates); labels[q] says what q accepts (bool for one pattern)."""

    starts: list[int]
    trans: list[list[int]]
    labels: list[Hashable]

    def cls(self, cp: int) -> int:
        return bisect.bisect_right(self.starts, cp) - 1

    def run(self, s: str, q: int = 0) -> int:
        for ch in s:
            if q < 0:
                return q
            q = self.trans[q][self.cls(ord(ch))]
        return q


def _closure(nfa: _Nfa, states: frozenset, at_start: bool, at_end: bool) -> frozenset:
    out = set(states)
    work = list(states)
    while work:
        s = work.pop()
        nxt = list(nfa.eps[s])
        for a, t in nfa.anchors[s]:
            if (a == "^" and at_start) or (a == "$" and at_end):
                nxt.append(t)
        for t in nxt:
            if t not in out:
                out.add(t)
                work.append(t)
    return frozenset(out)


def _leading_lookaheads(src: str, ptr: str) -> tuple[list[tuple[str, bool]], str]:
    """`^(?=X)(?!Y)R` -> ([(X, True), (Y, False)], "^R"); ([], src) for any other shape. A
    lookahead right after the start anchor is regular: the strings with (or without) a prefix
    matching X. (With a top-level '|' in R it would bind to the first alternative only: not split.)"""
    looks: list[tuple[str, bool]] = []
    i = 1
    if not src.startswith(("^(?=", "^(?!")):
        return [], src
    while src.startswith(("(?=", "(?!"), i):
        p = _Parser(src, ptr)
        p.i = i + 3
        p.alt()
        if p.peek() != ")":
            raise p.err("missing ')'")
        looks.append((src[i + 3:p.i], src[i + 2] == "="))
        i = p.i + 1
    rest = "^" + src[i:]
    if _Parser(rest, ptr).parse()[0] == "alt":
        return [], src
    return looks, rest


# (src, wide) -> its DFA, or the refusal (error class, message) made at the pattern's own pointer
_PATTERN_CACHE: dict[tuple[str, bool], Dfa | tuple[type[SpecError], str]] = {}
PATTERN_CACHE_SIZE = 512  # patterns kept across compiles (a schema repeats its $ref'd patterns)


def compile_pattern(src: str, ptr: str, wide: bool = False) -> Dfa:
    """The DFA of the strings in which `src` (ECMA-262 subset) finds a match; labels: bool.
    `wide`: the union of the ECMA-262 and Python readings (for the inside of a negative lookahead),
    else their intersection. Kept in a bounded cache (the DFA is never changed once made; its
    lazy tables only fill), refusals too: a pattern is determinized once, wherever it is used."""
    if not isinstance(src, str):
        raise SpecError(ptr, f"pattern must be a string, got {type(src).__name__}")
    key = (src, wide)
    hit = _PATTERN_CACHE.get(key)
    if hit is None:
        try:
            hit = _compile_pattern(src, ptr, wide)
        except SpecError as e:
            if e.pointer != (ptr or "/"):
                raise
            hit = (type(e), e.message)
        if len(_PATTERN_CACHE) >= PATTERN_CACHE_SIZE:
            _PATTERN_CACHE.pop(next(iter(_PATTERN_CACHE)))
        _PATTERN_CACHE[key] = hit
    if isinstance(hit, tuple):
        raise hit[0](ptr, hit[1])
    return hit


def _compile_pattern(src: str, ptr: str, wide: bool) -> Dfa:
    looks, rest = _leading_lookaheads(src, ptr)
    if looks:  # R intersected with (the complement of) "a prefix matches X", per lookahead
        parts = [_compile_pattern(rest, ptr, False)] + [_compile_pattern(f"^(?:{x})", ptr, not pos)
                                                         for x, pos in looks]
        d = product(parts, ptr)
        labels: list[Hashable] = []
        for lab in d.labels:
            assert isinstance(lab, tuple)
            labels.append(bool(lab[0]) and all(m == pos for m, (_, pos) in zip(lab[1:], looks)))
        return _minimize(Dfa(d.starts, d.trans, labels))
    return _dfa_of(_Parser(src, ptr).parse(), src, ptr, wide)


def _plain(node: Any) -> bool:
    """No anchor or assertion anywhere inside."""
    kind = node[0]
    if kind in ("bol", "eol", "look", "wordb"):
        return False
    if kind in ("cat", "alt"):
        return all(_plain(x) for x in node[1])
    return kind == "set" or _plain(node[1])


def _nullable(node: Any) -> bool:
    kind = node[0]
    if kind == "cat":
        return all(_nullable(x) for x in node[1])
    if kind == "alt":
        return any(_nullable(x) for x in node[1])
    if kind == "rep":
        return node[2] == 0 or _nullable(node[1])
    return False


def _search_core(node: Any) -> Any:
    """The same search language with less to track: a search is .* P .*, so a plain part of P
    that matches the empty string adds nothing at either end (.* A B .* = .* A .* when B is
    nullable), and X{n,m} at an end is X{n}. Unanchored patterns with long optional tails (URI
    patterns) otherwise blow up the subset construction before minimization shrinks them."""
    if node[0] == "alt":
        return ("alt", [_search_core(x) for x in node[1]])
    if node[0] == "rep" and _plain(node) and node[2] >= 1:
        return ("rep", node[1], node[2], node[2])
    if node[0] != "cat":
        return node
    items: list[Any] = []
    for x in node[1]:
        items += x[1] if x[0] == "cat" else [x]
    while items and _plain(items[-1]) and _nullable(items[-1]):
        items.pop()
    while items and _plain(items[0]) and _nullable(items[0]):
        items.pop(0)
    if len(items) == 1:
        return _search_core(items[0])
    if items and items[-1][0] == "rep" and _plain(items[-1]) and items[-1][2] >= 1:
        items[-1] = ("rep", items[-1][1], items[-1][2], items[-1][2])
    if items and items[0][0] == "rep" and _plain(items[0]) and items[0][2] >= 1:
        items[0] = ("rep", items[0][1], items[0][2], items[0][2])
    return ("cat", items)


def _dfa_of(ast: Any, src: str, ptr: str, wide: bool) -> Dfa:
    """The unanchored-search DFA of a parsed pattern (see `compile_pattern`)."""
    ast = _search_core(ast)
    nfa = _Nfa(ptr, wide)
    a, b = nfa.build(ast)
    if nfa.looks or any(x in ("b", "B") for anchors in nfa.anchors for x, _ in anchors):
        return _asserting_dfa(nfa, a, b, src, ptr, wide)
    start = nfa.new()
    final = nfa.new()
    nfa.chars[start].append((UNIVERSE, start))  # unanchored: any prefix
    nfa.eps[start].append(a)
    nfa.eps[b].append(final)
    nfa.chars[final].append((UNIVERSE, final))  # and any suffix
    # the class partition: every interval boundary of every edge
    cuts = {0, SURR[0], SURR[1] + 1, TOP}
    for edges in nfa.chars:
        for iv, _ in edges:
            for lo, hi in iv:
                cuts.add(lo)
                cuts.add(hi + 1)
    starts = sorted(cuts)[:-1]

    def classes_of(iv: Iv) -> list[int]:
        out = []
        for lo, hi in iv:
            i = bisect.bisect_right(starts, lo) - 1
            while i < len(starts) and starts[i] <= hi:
                out.append(i)
                i += 1
        return out

    edge_classes = [[(classes_of(iv), t) for iv, t in edges] for edges in nfa.chars]
    surr = bisect.bisect_right(starts, SURR[0]) - 1
    init = _closure(nfa, frozenset([start]), True, False)
    index: dict[frozenset, int] = {init: 0}
    order = [init]
    trans: list[list[int]] = []
    k = 0
    while k < len(order):
        cur = order[k]
        k += 1
        buckets: dict[int, set[int]] = {}
        for s in cur:
            for cl, t in edge_classes[s]:
                for c in cl:
                    buckets.setdefault(c, set()).add(t)
        row = []
        for c in range(len(starts)):
            if c == surr:
                row.append(-1)
                continue
            tgt = _closure(nfa, frozenset(buckets.get(c, ())), False, False)
            row.append(_intern(index, order, tgt, ptr, src))
        trans.append(row)
    labels: list[Hashable] = [final in _closure(nfa, st, i == 0, True) for i, st in enumerate(order)]
    return _minimize(_merge_classes(Dfa(starts, trans, labels)))


# -- lookaheads and word boundaries anywhere: obligations carried by the NFA threads ---------------
#
# A lookahead (?=X) / (?!X) crossed at position i holds iff the rest of the string (from i) is /
# is not in M(X) = "some prefix matches X" (the DFA of '^(?:X)' over that rest, `$` inside X meaning
# the very end). A thread of the subset construction that crosses it carries the obligation (that
# DFA, its state), advanced by every later character, and checked by its label at the end of the
# string: a regular language, exactly. `\b`/`\B` at position i compare the word-ness of the
# character before i (kept in the DFA state) with the one after i: once the previous character is
# known, it is a one-character lookahead. Obligations that can no longer fail are dropped, threads
# whose obligation can no longer hold die, so the state sets stay small.

def _obligation(d: Dfa, negate: bool) -> tuple[Dfa, list[bool], list[bool]]:
    """(DFA whose label True means "satisfied if the string ends here", sure[q], dead[q])."""
    labels: list[Hashable] = [(not lab) if negate else bool(lab) for lab in d.labels]
    n = len(d.trans)
    reach = [{q} for q in range(n)]
    changed = True
    while changed:  # transitive closure (these DFAs are small)
        changed = False
        for q in range(n):
            new = set(reach[q])
            for r in reach[q]:
                new.update(x for x in d.trans[r] if x >= 0)
            if len(new) > len(reach[q]):
                reach[q], changed = new, True
    sure = [all(labels[r] for r in reach[q]) for q in range(n)]
    dead = [not any(labels[r] for r in reach[q]) for q in range(n)]
    return Dfa(d.starts, d.trans, labels), sure, dead


def inside(iv: Iv, cp: int) -> bool:
    """Is code point cp in the interval set iv?"""
    i = bisect.bisect_right(iv, (cp, TOP)) - 1
    return i >= 0 and iv[i][0] <= cp <= iv[i][1]


def _word_sets() -> tuple[Iv, Iv]:
    """\\w as ECMA-262 reads it and as Python's `re` reads it (their \\b uses these)."""
    return _ECMA["w"], _intersect(_python_class("w"), UNIVERSE)


def _boundary_dfa(boundary: bool, prev: tuple[bool, bool], wide: bool) -> Dfa:
    """`\\b` (boundary) or `\\B` after a character of word-ness prev = (ECMA-262 \\w, Python \\w),
    as a one-character lookahead: the next character (or the end, a non-word position) must make
    the word-ness differ (\\b) or agree (\\B) under both readings (under either, if `wide`)."""
    we, wp = _word_sets()
    cuts = {0, SURR[0], SURR[1] + 1}
    for iv in (we, wp):
        for lo, hi in iv:
            cuts.update((lo, hi + 1))
    starts = sorted(c for c in cuts if c < TOP)

    def ok(e: bool, p: bool) -> bool:
        a, b = (e != prev[0], p != prev[1]) if boundary else (e == prev[0], p == prev[1])
        return (a or b) if wide else (a and b)

    row = [-1 if s == SURR[0] else 1 if ok(inside(we, s), inside(wp, s)) else 2 for s in starts]
    sinks = [[q if s != SURR[0] else -1 for s in starts] for q in (1, 2)]
    labels: list[Hashable] = [ok(False, False), True, False]
    return Dfa(starts, [row] + sinks, labels)


def _body_dfa(body: str, ptr: str, wide: bool) -> Dfa:
    """M(X): the strings with a prefix matching the lookahead body X."""
    ast = _Parser(body, ptr, in_look=True).parse()
    return _dfa_of(("cat", [("bol",), ast]), body, ptr, wide)


def _asserting_dfa(nfa: _Nfa, a: int, b: int, src: str, ptr: str, wide: bool) -> Dfa:
    """Subset construction over threads (NFA state, obligations) for patterns with lookaheads or
    word boundaries (see the comment above `_obligation`)."""
    start, final = nfa.new(), nfa.new()
    nfa.chars[start].append((UNIVERSE, start))
    nfa.eps[start].append(a)
    nfa.eps[b].append(final)
    nfa.chars[final].append((UNIVERSE, final))
    obls: list[tuple[Dfa, list[bool], list[bool]]] = []
    look_ids = []
    for body, pos in nfa.looks:
        look_ids.append(len(obls))
        # a positive body is read like the pattern; a negative one the other way (its complement)
        obls.append(_obligation(_body_dfa(body, ptr, wide if pos else not wide), negate=not pos))
    has_wb = any(x in ("b", "B") for anchors in nfa.anchors for x, _ in anchors)
    wb_ids: dict[tuple[bool, tuple[bool, bool]], int] = {}
    if has_wb:
        for kind in (True, False):
            for prev in ((False, False), (False, True), (True, False), (True, True)):
                wb_ids[(kind, prev)] = len(obls)
                obls.append(_obligation(_boundary_dfa(kind, prev, wide), negate=False))
    cuts = {0, SURR[0], SURR[1] + 1, TOP}
    for edges in nfa.chars:
        for iv, _ in edges:
            for lo, hi in iv:
                cuts.update((lo, hi + 1))
    for d, _, _ in obls:
        cuts.update(d.starts)
    starts = sorted(cuts)[:-1]
    maps = [[d.cls(s) for s in starts] for d, _, _ in obls]
    we, wp = _word_sets()
    wordness = [(inside(we, s), inside(wp, s)) for s in starts]

    def classes_of(iv: Iv) -> list[int]:
        out = []
        for lo, hi in iv:
            i = bisect.bisect_right(starts, lo) - 1
            while i < len(starts) and starts[i] <= hi:
                out.append(i)
                i += 1
        return out

    edge_classes = [[(set(classes_of(iv)), t) for iv, t in edges] for edges in nfa.chars]
    surr = bisect.bisect_right(starts, SURR[0]) - 1
    # classes that no edge, obligation or word-ness tells apart move every state alike: one
    # representative each (Python's \\w alone cuts the code points into hundreds of classes)
    members: dict[tuple, list[int]] = {}
    for c in range(len(starts)):
        sig = (tuple((s, i) for s, edges in enumerate(edge_classes) for i, (cl, _) in enumerate(edges) if c in cl),
               tuple(tuple(row[m[c]] for row in d.trans) for (d, _, _), m in zip(obls, maps)), wordness[c], c == surr)
        members.setdefault(sig, []).append(c)
    rep = [0] * len(starts)
    for cs in members.values():
        for c in cs:
            rep[c] = cs[0]
    Thread = tuple[int, frozenset]

    def add(o: frozenset, oid: int, q: int) -> Optional[frozenset]:
        _, sure, dead = obls[oid]
        if q < 0 or dead[q]:
            return None
        return o if sure[q] else o | {(oid, q)}

    def closure(threads: set[Thread], at_start: bool, at_end: bool, prev: tuple[bool, bool]) -> frozenset:
        out = set(threads)
        work = list(threads)
        while work:
            s, o = work.pop()
            nxt: list[Thread] = [(t, o) for t in nfa.eps[s]]
            for x, t in nfa.anchors[s]:
                if (x == "^" and at_start) or (x == "$" and at_end):
                    nxt.append((t, o))
                elif x[0] == "L" or x in ("b", "B"):
                    oid = look_ids[int(x[1:])] if x[0] == "L" else wb_ids[(x == "b", prev)]
                    o2 = add(o, oid, 0)
                    if o2 is not None:
                        nxt.append((t, o2))
            for th in nxt:
                if th not in out:
                    out.add(th)
                    work.append(th)
        # a thread whose obligations include another's on the same NFA state adds nothing
        by_state: dict[int, list[frozenset]] = {}
        for s, o in out:
            by_state.setdefault(s, []).append(o)
        kept = set()
        for s, os_ in by_state.items():
            for o in os_:
                if not any(p < o for p in os_):
                    kept.add((s, o))
        return frozenset(kept)

    def accepting(threads: frozenset, at_start: bool, prev: tuple[bool, bool]) -> bool:
        for s, o in closure(set(threads), at_start, True, prev):
            if s == final and all(obls[oid][0].labels[q] for oid, q in o):
                return True
        return False

    none = (False, False)  # before the first character: a non-word position
    memo: dict[tuple, frozenset] = {}
    init = (closure({(start, frozenset())}, True, False, none), none)
    index: dict[tuple, int] = {init: 0}
    order = [init]
    trans: list[list[int]] = []
    k = 0
    while k < len(order):
        threads, _prev = order[k]
        k += 1
        row: list[int] = []
        for c in range(len(starts)):
            if c == surr:
                row.append(-1)
                continue
            if rep[c] != c:
                row.append(row[rep[c]])
                continue
            moved: set[Thread] = set()
            for s, o in threads:
                targets = [t for cl, t in edge_classes[s] if c in cl]
                if not targets:
                    continue
                o2: Optional[frozenset] = frozenset()
                for oid, q in o:
                    o2 = add(o2, oid, obls[oid][0].trans[q][maps[oid][c]]) if o2 is not None else None
                if o2 is None:
                    continue
                moved.update((t, o2) for t in targets)
            prev = wordness[c] if has_wb else none
            key = (frozenset(moved), prev)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = closure(moved, False, False, prev)
            tgt = (hit, prev)
            row.append(_intern(index, order, tgt, ptr, src))
        trans.append(row)
    labels: list[Hashable] = [accepting(th, i == 0, prev) for i, (th, prev) in enumerate(order)]
    # minimize over the representative classes only, then spread the columns back
    reps = sorted(set(rep))
    col = {r: i for i, r in enumerate(reps)}
    small = _minimize(Dfa(list(range(len(reps))), [[row[r] for r in reps] for row in trans], labels), merge=False)
    full = [[srow[col[rep[c]]] for c in range(len(starts))] for srow in small.trans]
    return _merge_classes(Dfa(starts, full, small.labels))


def _merge_classes(d: Dfa) -> Dfa:
    """Adjacent classes with the same column are one class (fewer, wider classes)."""
    keep = [0]
    for c in range(1, len(d.starts)):
        if any(row[c] != row[keep[-1]] for row in d.trans):
            keep.append(c)
    if len(keep) == len(d.starts):
        return d
    return Dfa([d.starts[c] for c in keep], [[row[c] for c in keep] for row in d.trans], d.labels)


def _minimize(d: Dfa, merge: bool = True) -> Dfa:
    """Moore's partition refinement: equivalent states (same label, same class moves) merged
    (then adjacent equal classes, unless `merge` is False: the classes stay as they are). Each
    round numbers the signatures (block, block of each class move) with one numpy unique per
    class: a bounded repeat such as {1,256} takes hundreds of rounds over thousands of states."""
    import numpy as np

    n = len(d.trans)
    if n == 0:
        return d
    ids: dict[Hashable, int] = {}
    part = np.array([ids.setdefault(lab, len(ids)) for lab in d.labels], dtype=np.int64)
    blocks = len(ids)
    trans = np.array(d.trans, dtype=np.int64).reshape(n, len(d.starts))
    dead = trans < 0
    safe = np.where(dead, 0, trans)
    while True:
        # the signature (block, block of each move) numbered column by column: exact, each key
        # below n * (n + 1)
        moves = np.where(dead, -1, part[safe])
        key = part
        for c in range(moves.shape[1]):
            _, key = np.unique(key * (n + 1) + moves[:, c] + 1, return_inverse=True)
        count = int(key.max()) + 1
        if count == blocks:
            break
        part, blocks = key.reshape(-1), count
    if blocks == n:
        return d
    # renumber so the start state is 0
    remap: dict[int, int] = {}
    for q in [0] + list(range(n)):
        remap.setdefault(int(part[q]), len(remap))
    order = np.array([remap[int(b)] for b in part], dtype=np.int64)
    out = [[0] * len(d.starts) for _ in range(blocks)]
    labels: list[Hashable] = [None] * blocks
    moved = np.where(dead, -1, order[safe]).tolist()
    for q in range(n):
        r = int(order[q])
        out[r] = moved[q]
        labels[r] = d.labels[q]
    return _merge_classes(Dfa(d.starts, out, labels)) if merge else Dfa(d.starts, out, labels)


def product(dfas: Sequence[Dfa], ptr: str) -> Dfa:
    """The product DFA (reachable part); labels: the tuple of the components' labels."""
    cuts = sorted({s for d in dfas for s in d.starts})
    maps = [[d.cls(s) for s in cuts] for d in dfas]
    start = tuple(0 for _ in dfas)
    index = {start: 0}
    order = [start]
    trans = []
    k = 0
    while k < len(order):
        cur = order[k]
        k += 1
        row = []
        for c in range(len(cuts)):
            nxt = tuple(d.trans[q][maps[i][c]] for i, (d, q) in enumerate(zip(dfas, cur)))
            if any(x < 0 for x in nxt):
                row.append(-1)
                continue
            j = index.get(nxt)
            if j is None:
                if len(order) >= MAX_DFA_STATES:
                    raise SpecError(ptr, f"the key patterns' product automaton exceeds {MAX_DFA_STATES} states "
                                         "(budget)")
                j = index[nxt] = len(order)
                order.append(nxt)
            row.append(j)
        trans.append(row)
    labels: list[Hashable] = [tuple(d.labels[q] for d, q in zip(dfas, st)) for st in order]
    return _minimize(_merge_classes(Dfa(cuts, trans, labels)))


def any_string_dfa() -> Dfa:
    return Dfa([0, SURR[0], SURR[1] + 1], [[0, -1, 0]], [True])


def literal_set_dfa(words: Sequence[str]) -> Dfa:
    """The DFA of a finite set of strings (enum/const of propertyNames); labels: bool."""
    pat = "|".join("(?:" + "".join(_quote(ch) for ch in w) + ")" for w in words)
    return compile_pattern(f"^(?:{pat})$", "")


def literal_pattern(words: Sequence[str]) -> str:
    """A pattern matching exactly the strings `words` (anchored, every character escaped)."""
    return "^(?:" + "|".join("(?:" + "".join(_quote(ch) for ch in w) + ")" for w in words) + ")$"


def _quote(ch: str) -> str:
    cp = ord(ch)
    return f"\\u{cp:04x}" if cp <= 0xFFFF else ch


# -- a language with length bounds ------------------------------------------------------------------

@dataclass(eq=False)
class StringLang:
    """The strings whose DFA label `accepts` and whose length (code points) is in [min_len, max_len].

    States that cannot reach acceptance are cut (-1). `feasible(q, n)`: after n characters in
    state q some completion is in the language (the text machine's dead-end check); lengths are
    exact via the layers "states that accept in exactly r more characters", which become periodic."""

    dfa: Dfa
    accepts: Callable[[Hashable], bool]
    min_len: int = 0
    max_len: Optional[int] = None
    ptr: str = ""
    _feas: dict = field(default_factory=dict)
    _live_iv: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        d = self.dfa
        n = len(d.trans)
        acc = [bool(self.accepts(lab)) for lab in d.labels]
        # co-reachable states
        preds: list[set[int]] = [set() for _ in range(n)]
        for q, row in enumerate(d.trans):
            for t in row:
                if t >= 0:
                    preds[t].add(q)
        live = {q for q in range(n) if acc[q]}
        work = list(live)
        while work:
            t = work.pop()
            for q in preds[t]:
                if q not in live:
                    live.add(q)
                    work.append(q)
        self.trans = [[t if t in live else -1 for t in row] for row in d.trans]
        self.acc = acc
        self.starts = d.starts
        self.succ = [sum(1 << t for t in set(row) if t >= 0) for row in self.trans]
        self.nstates = n
        self.start = 0 if 0 in live else -1
        # layers: bit q of layer r = q accepts in exactly r more characters
        layer = sum(1 << q for q in range(n) if acc[q])
        seen: dict[int, int] = {}
        self.layers: list[int] = []
        bound = None if self.max_len is None else self.max_len + 1
        while layer not in seen and (bound is None or len(self.layers) < bound):
            if len(self.layers) >= MAX_LAYERS:
                raise SpecError(self.ptr, f"the length analysis of the pattern exceeds {MAX_LAYERS} steps (budget)")
            seen[layer] = len(self.layers)
            self.layers.append(layer)
            layer = sum(1 << q for q in range(n) if self.succ[q] & layer)
        # layers r >= cycle_start repeat with period len(layers) - cycle_start (or stop at the bound)
        self.cycle_start = seen.get(layer, len(self.layers)) if layer in seen else len(self.layers)
        self.periodic = layer in seen
        self._layer_union_from: dict[int, int] = {}

    def _sizes(self) -> list[int]:
        sizes = getattr(self, "_size_cache", None)
        if sizes is None:
            sizes = []
            for c, lo in enumerate(self.starts):
                hi = (self.starts[c + 1] if c + 1 < len(self.starts) else TOP) - 1
                sizes.append(hi - lo + 1 - max(0, min(hi, SURR[1]) - max(lo, SURR[0]) + 1))
            self._size_cache = sizes
        return sizes

    def _reaches_cycle(self) -> list[bool]:
        hit = getattr(self, "_cyc_cache", None)
        if hit is None:
            alive = {q for q in range(self.nstates) if any(t >= 0 for t in self.trans[q])}
            changed = True
            while changed:  # peel off states whose successors all lead nowhere further
                changed = False
                for q in list(alive):
                    if not any(t in alive for t in self.trans[q] if t >= 0):
                        alive.discard(q)
                        changed = True
            hit = self._cyc_cache = [q in alive for q in range(self.nstates)]
        return hit

    def count(self, q: int, n: int, cap: int) -> int:
        """How many completions from (q, n) are in the language, saturated at `cap` (keys that are
        still free when `cap - 1` of them are excluded)."""
        if q < 0:
            return 0
        a = max(0, self.min_len - n)
        b = None if self.max_len is None else self.max_len - n
        if b is None and self._reaches_cycle()[q]:
            return cap  # infinitely many
        top = b if b is not None else self.nstates
        lengths = [r for r in range(a, top + 1) if self._layer(r) >> q & 1] if top - a < MAX_LAYERS else None
        if lengths is None or len(lengths) >= cap:
            return cap  # that many different lengths: that many different strings
        if not lengths:
            return 0
        vecs = self._counts(cap, lengths[-1])
        return min(cap, sum(vecs[r][q] for r in lengths))

    def _counts(self, cap: int, upto: int) -> list[list[int]]:
        """vecs[r][q]: strings of exactly r more characters accepted from q (saturated at cap)."""
        store: dict = self.__dict__.setdefault("_count_cache", {})
        vecs = store.setdefault(cap, [[1 if self.acc[q] else 0 for q in range(self.nstates)]])
        sizes = self._sizes()
        while len(vecs) <= upto:
            prev = vecs[-1]
            vecs.append([min(cap, sum(sizes[c] * prev[t] for c, t in enumerate(row) if t >= 0 and prev[t]))
                         for row in self.trans])
        return vecs

    def _layer(self, r: int) -> int:
        if r < len(self.layers):
            return self.layers[r]
        if not self.periodic:
            return 0
        p = len(self.layers) - self.cycle_start
        return self.layers[self.cycle_start + (r - self.cycle_start) % p]

    def feasible_mask(self, n: int) -> int:
        """Bitmask of the states from which some completion fits, after n characters."""
        hit = self._feas.get(n)
        if hit is not None:
            return hit
        a = max(0, self.min_len - n)
        out = 0
        if self.max_len is not None:
            b = self.max_len - n
            if b >= a:
                p = len(self.layers) - self.cycle_start if self.periodic else 0
                # distinct layers in [a, b]: at most the preperiod plus one period
                stop = b if not self.periodic else min(b, max(a, self.cycle_start) + p - 1)
                for r in range(a, stop + 1):
                    out |= self._layer(r)
        else:
            p = len(self.layers) - self.cycle_start if self.periodic else 0
            stop = (max(a, self.cycle_start) + p - 1) if self.periodic else len(self.layers) - 1
            for r in range(a, stop + 1):
                out |= self._layer(r)
        if len(self._feas) > 100_000:
            self._feas.clear()
        self._feas[n] = out
        return out

    def norm(self, n: int) -> int:
        """n as far as feasibility cares (without maxLength only n < minLength matters)."""
        return n if self.max_len is not None else min(n, self.min_len)

    def feasible(self, q: int, n: int) -> bool:
        return q >= 0 and bool(self.feasible_mask(n) >> q & 1)

    def can_end(self, q: int, n: int) -> bool:
        return q >= 0 and self.acc[q] and n >= self.min_len and (self.max_len is None or n <= self.max_len)

    def step(self, q: int, n: int, cp: int) -> int:
        """State after one more character cp (after n characters), or -1 if no completion fits."""
        if q < 0 or (self.max_len is not None and n + 1 > self.max_len):
            return -1
        t = self.trans[q][bisect.bisect_right(self.starts, cp) - 1]
        return t if self.feasible(t, self.norm(n + 1)) else -1

    def live_intervals(self, q: int, n: int) -> list[tuple[int, int]]:
        """The code points that may come next from (q, n), as sorted intervals."""
        key = (q, n)
        hit = self._live_iv.get(key)
        if hit is not None:
            return hit
        out: list[tuple[int, int]] = []
        if q >= 0 and (self.max_len is None or n + 1 <= self.max_len):
            fm = self.feasible_mask(self.norm(n + 1))
            row = self.trans[q]
            for c, t in enumerate(row):
                if t >= 0 and fm >> t & 1:
                    lo = self.starts[c]
                    hi = (self.starts[c + 1] if c + 1 < len(self.starts) else TOP) - 1
                    if out and out[-1][1] + 1 == lo:
                        out[-1] = (out[-1][0], hi)
                    else:
                        out.append((lo, hi))
        if len(self._live_iv) > 50_000:
            self._live_iv.clear()
        self._live_iv[key] = out
        return out

    def range_live(self, q: int, n: int, lo: int, hi: int) -> bool:
        """Is some code point in [lo, hi] a live next character?"""
        ivs = self.live_intervals(q, n)
        i = bisect.bisect_right(ivs, (lo, TOP)) - 1
        if i >= 0 and ivs[i][1] >= lo:
            return True
        return i + 1 < len(ivs) and ivs[i + 1][0] <= hi

    def matches(self, s: str) -> bool:
        if not (len(s) >= self.min_len and (self.max_len is None or len(s) <= self.max_len)):
            return False
        q = self.start
        for ch in s:
            if q < 0:
                return False
            cp = ord(ch)
            if SURR[0] <= cp <= SURR[1]:
                return False
            q = self.trans[q][bisect.bisect_right(self.starts, cp) - 1]
        return q >= 0 and self.acc[q]

    def empty(self) -> bool:
        return not self.feasible(self.start, 0)

    def example(self) -> Optional[str]:
        """One string of the language, by a shortest completion at each step (exact: the layers)."""
        q, n = self.start, 0
        out: list[str] = []
        if self.empty():
            return None
        while True:
            a = max(0, self.min_len - n)
            b = None if self.max_len is None else self.max_len - n
            r = a
            while not (self._layer(r) >> q & 1):
                r += 1
                if (b is not None and r > b) or r > a + len(self.layers) + 1:
                    raise AssertionError("a feasible state without a completion")
            if r == 0:
                return "".join(out)
            want = self._layer(r - 1)
            for lo, hi in self.live_intervals(q, self.norm(n)):
                cp = next((c for c in _pick(lo, hi) if True), lo)
                t = self.trans[q][bisect.bisect_right(self.starts, cp) - 1]
                if t >= 0 and want >> t & 1:
                    break
                # another code point of the interval may reach a different class
                found = False
                c = lo
                while c <= hi:
                    t = self.trans[q][bisect.bisect_right(self.starts, c) - 1]
                    if t >= 0 and want >> t & 1:
                        cp, found = c, True
                        break
                    i = bisect.bisect_right(self.starts, c)
                    c = self.starts[i] if i < len(self.starts) else TOP
                if found:
                    break
            else:
                raise AssertionError("no next character toward acceptance")
            out.append(chr(cp))
            q, n = t, n + 1

    def examples(self, k: int, avoid: frozenset = frozenset(), limit: int = 100_000) -> list[str]:
        """Up to k strings of the language not in `avoid`, shortest first (a search with a budget)."""
        out: list[str] = []
        if self.empty():
            return out
        frontier: list[tuple[str, int]] = [("", self.start)]
        steps = 0
        while frontier and len(out) < k and steps < limit:
            nxt: list[tuple[str, int]] = []
            for s, q in frontier:
                n = len(s)
                if self.can_end(q, n) and s not in avoid:
                    out.append(s)
                    if len(out) == k:
                        return out
                for c, t0 in enumerate(self.trans[q]):  # per class: every class is tried
                    if t0 < 0:
                        continue
                    lo = self.starts[c]
                    hi = (self.starts[c + 1] if c + 1 < len(self.starts) else TOP) - 1
                    for cp in _pick(lo, hi)[:2]:
                        t = self.step(q, self.norm(n), cp)
                        if t >= 0:
                            nxt.append((s + chr(cp), t))
                            steps += 1
            frontier = nxt[:max(64, 4 * k)] if len(nxt) > 4096 else nxt
        return out


def _pick(lo: int, hi: int) -> list[int]:
    """A few readable code points of an interval (printable ASCII first)."""
    out = []
    for cp in (ord("a"), ord("A"), ord("0"), ord("x"), ord("b"), ord("1")):
        if lo <= cp <= hi:
            out.append(cp)
    a = lo
    while len(out) < 3 and a <= hi:
        if a not in out and (a >= 0x20 or a in (9, 10)) and not (0x7F <= a < 0xA0):
            out.append(a)
        a += 1
    if not out:
        out.append(lo)
    return out[:3]


def pattern_lang(pattern: str, ptr: str, min_len: int = 0, max_len: Optional[int] = None) -> StringLang:
    """The language of a string schema's `pattern` within its length bounds."""
    return StringLang(compile_pattern(pattern, ptr), bool, min_len, max_len, ptr)


def all_patterns_lang(patterns: Sequence[str], ptr: str, min_len: int = 0,
                      max_len: Optional[int] = None) -> StringLang:
    """Several patterns that all apply (an allOf of patterns): the product, accepting where all do."""
    dfas = [compile_pattern(p, ptr) for p in patterns]
    if len(dfas) == 1:
        return StringLang(dfas[0], bool, min_len, max_len, ptr)
    return StringLang(product(dfas, ptr), _all_true, min_len, max_len, ptr)


def regular_lang(patterns: Sequence[str], excluded: Sequence[str], ptr: str, min_len: int = 0,
                 max_len: Optional[int] = None) -> StringLang:
    """Strings in which every pattern of `patterns` finds a match and none of `excluded` does (an
    allOf of patterns and negated patterns, from graph/negation.py): the product automaton."""
    dfas = [compile_pattern(p, f"{ptr}/pattern") for p in list(patterns) + list(excluded)]
    n = len(patterns)
    if not dfas:
        return StringLang(any_string_dfa(), bool, min_len, max_len, ptr)
    if len(dfas) == 1:
        return StringLang(dfas[0], bool if n else _negated, min_len, max_len, ptr)

    def accepts(label: Hashable) -> bool:
        assert isinstance(label, tuple)
        return all(label[:n]) and not any(label[n:])
    return StringLang(product(dfas, f"{ptr}/pattern"), accepts, min_len, max_len, ptr)


def _negated(label: Hashable) -> bool:
    return not label


def _all_true(label: Hashable) -> bool:
    assert isinstance(label, tuple)
    return all(label)
