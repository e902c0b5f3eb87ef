"""The canonical record text as a lazy byte automaton driven by the factor graph.

A configuration is (stack of pending tasks, solver State). Tasks, top of the stack last:
  ('L', bytes)                 literal text still to write
  ('V', path)                  the value at `path`, not started
  ('O', path, j, n)            an object's fields from field j on, n fields written so far
  ('A', path, k)               an array with k items written (next: another item, or ']')
  ('A', path, k, seen)         the same for a `text_unique` array: `seen` the earlier items' values
                               (unique_values.item_value: JSON equality, not text equality)
  ('C', path, k, c)            a `contains` array with k items, c of them matching (`_counted`)
  ('W', path, k, seen)         a text_unique array's item k, after its separator (becomes U and V)
  ('U', path, k, seen, raw, near)  under item k of a text_unique array: `raw` its text so far (every
                               byte the tasks above consume is added), `near` the earlier values
                               some completion of `raw` may still equal; when the item ends its
                               value must not be in `seen`, and after every byte some completion of
                               the item must still differ from every earlier item (`_distinct_ok`)
  ('S', path, prefix)          inside an enum/number text
  ('T', path, nchars, esc, pend)  inside a free-text string body
  ('G', path, n) / ('H', path, n)  members / items of an object / array inside an any-value
  ('G', path, n, used)         the same inside a text_unique item: `used` its keys (never repeated)
  ('P', path, j, n, mask)      an object with property-count/dependency rules (`objects.py`)
  ('E', path, n, used)         an open object's extra members (after its declared fields; n
                               members in all so far, `used` the extra keys written)
  ('X', path, 0, esc, pend, raw, used)  inside an extra member's key (never a declared or used key;
                               `raw` is the key's text so far)
A union node's value starts as any of its alternatives (path element ('|', i)); an any-value's
parts live at path + ('#s',) (a string), ('#n',) (a number), ('#v',) (a member or item).
A set of configurations is the automaton state (choices such as optional fields can share a
prefix). Every transition keeps the text a prefix of some valid record: values are checked
against the solver's exact feasible sets, structural choices against array lengths/presence.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, Optional

from factorspec.graph.domain import dmax, dmin, dsize, dvalues
from factorspec.graph.limits import MAX_DEPTH
from factorspec.graph.objects import ObjectRules, rule_fields
from factorspec.graph.recursion import Heights, has_refs
from factorspec.graph.regex_lang import TOP, StringLang
from factorspec.graph.relations import format_decimal
from factorspec.graph.schema import Arr, LayoutNode, Obj, Scalar, TextStyle
from factorspec.graph.spec import CompiledSpec
from factorspec.graph.unique_values import could_equal, item_value

Config = tuple  # (stack: tuple, sol: State | None)
MASK_CACHE_BYTES = 4 << 20  # per machine: about 220 masks of a 150k-token vocabulary
ENDED_CACHE_ENTRIES = 200_000  # per machine: configuration inside a scalar -> configurations after it
SMALL_DOMAIN = 64  # numeric slots with at most this many candidate values are matched as texts
_NUM_PREFIX = re.compile(rb"-?(0|[1-9][0-9]*)?(\.[0-9]*)?")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESC = frozenset(b'"\\/bfnrt')
_CANON_ESC = frozenset(b'"\\bfnrt')  # the short escapes json.dumps writes (not \/)
_LOWER_HEX = frozenset(b"0123456789abcdef")
# allowed range of the next UTF-8 continuation byte: 0 any, 1 after E0, 2 after ED, 3 after F0, 4 after F4
_CONT = ((0x80, 0xBF), (0xA0, 0xBF), (0x80, 0x9F), (0x90, 0xBF), (0x80, 0x8F))
_BYTE = tuple(bytes([b]) for b in range(256))
# tasks whose expansion only pushes above them (each handler builds `rest + new tasks`, reading
# nothing below): expanded alone, their results hold for any stack below (`expand`); an expansion
# that would finish the task and go on below (an empty result stack) is not one of these
_ON_TOP = frozenset("OPEVACGH")
# `_distinct_ok`'s byte order where any byte may come next: the closing quote (ends a string item,
# usually on a value no earlier item has), printable ASCII from the top (rarer as the next byte of an
# earlier item's text than letters and digits at the bottom), then every other byte
_PROBE_ORDER = (0x22, *(b for b in range(0x7E, 0x1F, -1) if b != 0x22), *range(0x7F, 0x100), *range(0x20))


class TextMachine:
    """The byte automaton of one compiled spec (shared by every request of that spec)."""

    def __init__(self, spec: CompiledSpec, style: Optional[TextStyle] = None, max_depth: int = MAX_DEPTH) -> None:
        self.spec = spec
        # a recursive layout (recursion.py): the texts are its instances within max_depth levels
        self.heights: Optional[Heights] = Heights(spec.template, max_depth) if has_refs(spec.template) else None
        self.max_depth = max_depth
        self._levels: dict[tuple, int] = {}
        self.style = style or spec.style
        self.sep = self.style.item_sep.encode()
        self.key_sep = self.style.key_sep.encode()
        self._nodes: dict[tuple, LayoutNode] = {}
        self._expand_cache: dict = {}
        self._texts_cache: dict = {}
        self._declared_cache: dict = {}
        self._heads: dict[tuple, bytes] = {}  # (field path, after another field?) -> its key's text
        # (vocab, configurations) -> boundary mask, shared by every request of the spec (masks.py)
        self.mask_cache: dict = {}
        self._mask_bytes = 0
        # uniqueItems kept in the text (spec.unique_relations): 'U' tasks, canonical strings
        self.unique = _any_text_unique(spec.template)
        self._canon_cache: dict[tuple, bool] = {}
        self._distinct_cache: dict = {}
        # configuration inside a scalar's text -> the configurations after ending the scalar there:
        # a mask's trie walk asks it once per byte it tries from that configuration, each a decimal
        # parse and a solver question (a quarter of all mask time on a JSONSchemaBench sample)
        self._ended_cache: dict[Config, tuple] = {}

    def cache_mask(self, key: tuple, mask: Any) -> None:
        """Keep a computed boundary mask (at most MASK_CACHE_BYTES per machine, then start over)."""
        if self._mask_bytes + mask.nbytes > MASK_CACHE_BYTES:
            self.mask_cache.clear()
            self._mask_bytes = 0
        self.mask_cache[key] = mask
        self._mask_bytes += mask.nbytes

    # -- configurations -------------------------------------------------------------------------
    def initial(self) -> frozenset:
        sol = self.spec.root() if self.spec.vars else None
        out = self.expand((( ("V", ()), ), sol))
        if self.unique:
            out = [c for c in out if self._distinct_ok(c)]
        return frozenset(out)

    def node_at(self, path: tuple) -> LayoutNode:
        n = self._nodes.get(path)
        if n is None:
            node = self.spec.template
            for p in path:
                if isinstance(node, Scalar):
                    node = _sub_node(node, p)
                elif isinstance(p, tuple):  # an open object's extra member value / key
                    assert isinstance(node, Obj) and node.extra is not None
                    if len(p) == 2 and p[0] == "+":  # the value schema of a patterned key
                        assert node.keys is not None
                        node = node.keys.values[p[1]]
                    else:
                        node = node.extra if p == ("+",) else _ANY_STRING  # type: ignore[assignment]
                elif isinstance(node, Obj):
                    node = next(f.node for f in node.fields if f.key == p)
                else:
                    assert isinstance(node, Arr)  # a path goes through objects and arrays only
                    node = node.item
            self._nodes[path] = n = node
        return n

    def level_at(self, path: tuple) -> int:
        """How many arrays/objects enclose the value at `path` (recursive layouts only)."""
        n = self._levels.get(path)
        if n is not None:
            return n
        i = len(path)  # the longest prefix already known, then forward from there
        while i > 0 and path[:i] not in self._levels:
            i -= 1
        n = self._levels.get(path[:i], 0)
        for j in range(i, len(path)):
            parent = self.node_at(path[:j])
            if isinstance(parent, (Obj, Arr)) or (path[j] == "#v" and isinstance(parent, Scalar)):
                n += 1
            self._levels[path[: j + 1]] = n
        return n

    def fits(self, path: tuple) -> bool:
        """Does some instance of the value at `path` fit within the depth left (always, for a
        layout without recursion)?"""
        if self.heights is None:
            return True
        return self.level_at(path) + self.heights.of(self.node_at(path)) <= self.max_depth

    def rules_at(self, path: tuple, node: Obj) -> ObjectRules:
        """The object's rules, with the parts that cannot fit in the depth left forbidden."""
        assert node.rules is not None
        if self.heights is None:
            return node.rules
        return self.heights.rules_within(node, self.max_depth - self.level_at(path) - 1)

    def expand(self, cfg: Config) -> list[Config]:
        """Resolve the top task until it consumes bytes (or the stack is empty)."""
        key = cfg
        hit = self._expand_cache.get(key)
        if hit is not None:
            return hit
        stack0 = cfg[0]
        if self.unique and len(stack0) > 1 and stack0[-1][0] in _ON_TOP and any(t[0] == "U" for t in stack0):
            # under a unique item's 'U' task (its text so far makes every such stack new, so the
            # cache never hits): the top task alone, then the rest below each result
            part = self.expand(((stack0[-1],), cfg[1]))
            if all(st for st, _sol in part):
                rest = stack0[:-1]
                return [(rest + st, sol) for st, sol in part]
        out: list[Config] = []
        work = [cfg]
        while work:
            stack, sol = work.pop()
            if not stack:
                out.append((stack, sol))
                continue
            top = stack[-1]
            kind = top[0]
            rest = stack[:-1]
            if kind == "L":
                if top[1]:
                    out.append((stack, sol))
                else:
                    work.append((rest, sol))
            elif kind == "V":
                work.extend(self._start_value(rest, top[1], sol))
            elif kind == "O":
                work.extend(self._fields(rest, top, sol))
            elif kind == "A":
                work.extend(self._items(rest, top, sol))
            elif kind == "C":
                work.extend(self._counted(rest, top, sol))
            elif kind == "E":
                work.extend(self._extra(rest, top, sol))
            elif kind == "P":
                work.extend(rule_fields(self, rest, top, sol))
            elif kind == "G" or kind == "H":
                work.extend(self._any_parts(rest, top, sol))
            elif kind == "W":
                work.append((rest + (("U", top[1], top[2], top[3], b"", top[3]), ("V", top[1] + (top[2],))),
                             sol))
            elif kind == "U":  # the item ended: distinct from the earlier ones, then one of them
                a = rest[-1]
                val = item_value(top[4])
                if val not in top[3]:
                    assert a[0] == "A" and a[1] == top[1]
                    work.append((rest[:-1] + (("A", a[1], a[2], a[3] | {val}),), sol))
            else:
                out.append((stack, sol))
        if len(self._expand_cache) > 200_000:
            self._expand_cache.clear()
        self._expand_cache[key] = out
        return out

    def _start_value(self, rest: tuple, path: tuple, sol: Any) -> list[Config]:
        node = self.node_at(path)
        if isinstance(node, Obj):
            if node.rules is not None:
                return [(rest + (("P", path, 0, 0, 0), ("L", b"{")), sol)]
            return [(rest + (("O", path, 0, 0), ("L", b"{")), sol)]
        if isinstance(node, Arr):
            if node.contains is not None:
                return [(rest + (("C", path, 0, 0), ("L", b"[")), sol)]
            if node.text_unique:
                return [(rest + (("A", path, 0, frozenset()), ("L", b"[")), sol)]
            return [(rest + (("A", path, 0), ("L", b"[")), sol)]
        if node.kind == "string":
            if node.lang is not None:
                return [(rest + (("R", path, node.lang.start, 0, 0, 0), ("L", b'"')), sol)]
            return [(rest + (("T", path, 0, 0, 0), ("L", b'"')), sol)]
        if node.kind in ("union", "ref"):  # a reference node: its one alternative is the target
            alts = [path + (("|", i),) for i in range(len(node.alts))]
            return [(rest + (("V", p),), sol) for p in alts if self.heights is None or self.fits(p)]
        if node.kind == "any":
            g: tuple = ("G", path, 0, frozenset()) if self.unique and self.canonical(path) else ("G", path, 0)
            scalars = [(rest + (("T", path + ("#s",), 0, 0, 0), ("L", b'"')), sol),
                       (rest + (("S", path + ("#n",), b""),), sol),
                       (rest + (("L", b"true"),), sol), (rest + (("L", b"false"),), sol),
                       (rest + (("L", b"null"),), sol)]
            if self.heights is not None and self.level_at(path) >= self.max_depth:  # no room for a container
                return scalars
            return scalars + [(rest + (g, ("L", b"{")), sol),
                              (rest + (("H", path, 0), ("L", b"[")), sol)]
        return [(rest + (("S", path, b""),), sol)]

    def _extra(self, rest: tuple, top: tuple, sol: Any) -> list[Config]:
        """An open object after its declared fields: close (once minProperties is met), or one more
        member (within maxProperties) with a key that is neither declared nor already used."""
        _, path, n, used = top
        node: Obj = self.node_at(path)  # type: ignore[assignment]
        rules = node.rules if node.rules is None else self.rules_at(path, node)
        out = []
        if rules is None or n >= rules.min_props:
            out.append((rest + (("L", b"}"),), sol))
        if (rules is None or rules.max_props is None or n < rules.max_props) and \
                (node.keys is None or node.keys.more_keys(used)) and \
                self.fits(path + ((("+",) if node.keys is None else ("+", 0)),)):
            # the key's task is replaced by an ('E', ...) with the key added when it closes
            key: tuple = ("X", path, 0, 0, 0, b"", used) if node.keys is None else \
                ("K", path, node.keys.lang.start, 0, 0, 0, "", used)
            more = (("E", path, n + 1, used), ("V", path + (("+",),)), ("L", self.key_sep),
                    key, ("L", (self.sep if n else b"") + b'"'))
            out.append((rest + more, sol))
        return out

    def _declared(self, path: tuple) -> frozenset:
        hit = self._declared_cache.get(path)
        if hit is None:
            node = self.node_at(path)  # an object, or an any-value (its objects declare nothing)
            hit = self._declared_cache[path] = frozenset(f.key for f in node.fields) \
                if isinstance(node, Obj) else frozenset()
        return hit

    def _key_byte(self, top: tuple, b: int) -> Any:
        """One byte of an extra member's key: a JSON string body that does not decode to a declared
        key or to one already used in this object. Returns the next X task, or ("end", key)."""
        _, path, _nchars, esc, pend, raw, used = top
        nxt = self._string_byte(("T", path + (("+s",),), 0, esc, pend), b)
        if nxt is None:
            return None
        if nxt == "end":
            key = json.loads(b'"' + raw + b'"')
            if key in used or key in self._declared(path):
                return None
            return ("end", key)
        return ("X", path, 0, nxt[3], nxt[4], raw + bytes([b]), used)

    def _any_parts(self, rest: tuple, top: tuple, sol: Any) -> list[Config]:
        """Inside an any-value's object (G) or array (H) with n parts written: close, or one more."""
        kind, path, n = top[:3]
        sep = self.sep if n else b""
        child = ("V", path + ("#v",))
        more: tuple
        if kind == "G" and len(top) == 4:  # in a unique item: a key not used in this object yet
            more = (("G", path, n + 1, top[3]), child, ("L", self.key_sep), ("X", path, 0, 0, 0, b"", top[3]),
                    ("L", sep + b'"'))
            return [(rest + (("L", b"}"),), sol), (rest + more, sol)]
        if kind == "G":
            more = (("G", path, n + 1), child, ("L", self.key_sep), ("T", path + ("#s",), 0, 0, 0),
                    ("L", sep + b'"'))
            return [(rest + (("L", b"}"),), sol), (rest + more, sol)]
        more = (("H", path, n + 1), child) + ((("L", sep),) if sep else ())
        return [(rest + (("L", b"]"),), sol), (rest + more, sol)]

    def _fields(self, rest: tuple, top: tuple, sol: Any) -> list[Config]:
        _, path, j, n = top
        node: Obj = self.node_at(path)  # type: ignore[assignment]
        if j == len(node.fields):
            if node.extra is not None:
                return [(rest + (("E", path, n, frozenset()),), sol)]
            return [(rest + (("L", b"}"),), sol)]
        f = node.fields[j]
        fpath = path + (f.key,)
        head = self._heads.get((fpath, n > 0))
        if head is None:
            head = self._heads[(fpath, n > 0)] = \
                (self.sep if n else b"") + json.dumps(f.key, ensure_ascii=False).encode() + self.key_sep
        present = (rest + (("O", path, j + 1, n + 1), ("V", fpath), ("L", head)), sol)
        if f.required:
            return [present]
        absent = (rest + (("O", path, j + 1, n),), sol)
        pv = self.spec.present_var_of.get(fpath)
        if not self.fits(fpath):  # too deep for any instance here (recursive layouts)
            if pv is None:
                return [absent]
            s0 = sol.narrow(pv.id, frozenset([0]))
            return [] if s0 is None else [(absent[0], s0)]
        if pv is None:
            return [present, absent]
        out = []
        s1 = sol.narrow(pv.id, frozenset([1]))
        if s1 is not None:
            out.append((present[0], s1))
        s0 = sol.narrow(pv.id, frozenset([0]))
        if s0 is not None:
            out.append((absent[0], s0))
        return out

    def _counted(self, rest: tuple, top: tuple, sol: Any) -> list[Config]:
        """A `contains` array with k items, c of them written as matching items (alternative 0 of
        the item union; saturated at minContains when there is no maxContains): close once
        minItems and minContains are met, or one more matching item (within maxContains) or other
        item, each only while minContains can still be met within maxItems (every other item can
        be a non-matching one, so that is the only condition). No solver variable names such an
        array (spec.text_unique_relation_check)."""
        _, path, k, c = top
        node: Arr = self.node_at(path)  # type: ignore[assignment]
        assert node.contains is not None
        cmin, cmax = node.contains
        out = []
        if k >= node.min_items and c >= cmin:
            out.append((rest + (("L", b"]"),), sol))
        sep = ("L", self.sep if k else b"")
        for i, c2 in ((0, c + 1), (1, c)):
            if cmax is not None and c2 > cmax:
                continue
            c2 = c2 if cmax is not None else min(c2, cmin)
            if node.max_items is not None and max(node.min_items, k + 1 + max(0, cmin - c2)) > node.max_items:
                continue
            p = path + (k, ("|", i))
            if self.fits(p):
                out.append((rest + (("C", path, k + 1, c2), ("V", p), sep), sol))
        return out

    def _items(self, rest: tuple, top: tuple, sol: Any) -> list[Config]:
        path, k = top[1], top[2]
        node: Arr = self.node_at(path)  # type: ignore[assignment]
        if node.text_unique:  # (no solver variable names such an array: spec.text_unique_relation_check)
            out = []
            if (node.max_items is None or k < node.max_items) and self.fits(path + (k,)):
                out.append((rest + (("A", path, k + 1, top[3]), ("W", path, k, top[3]),
                                    ("L", self.sep if k else b"")), sol))
            if k >= node.min_items:
                out.append((rest + (("L", b"]"),), sol))
            return out
        more = (rest + (("A", path, k + 1), ("V", path + (k,)), ("L", self.sep if k else b"")), sol)
        close = (rest + (("L", b"]"),), sol)
        lv = self.spec.len_var_of.get(path)
        if lv is None:
            out = []
            if k + 1 <= (node.max_items if node.max_items is not None else k + 1) and self.fits(path + (k,)):
                out.append(more)
            if k >= node.min_items:
                out.append(close)
            return out
        out = []
        s_more = sol.narrow(lv.id, (k + 1, lv.hi))
        if s_more is not None:
            out.append((more[0], s_more))
        s_close = sol.narrow(lv.id, frozenset([k]))
        if s_close is not None:
            out.append((close[0], s_close))
        return out

    # -- scalar texts -----------------------------------------------------------------------------
    def _texts(self, path: tuple, sol: Any) -> Optional[dict[bytes, int]]:
        """Feasible value texts of a scalar (text -> internal value), or None for interval mode."""
        key = (path, sol)
        if key in self._texts_cache:
            return self._texts_cache[key]
        node: Scalar = self.node_at(path)  # type: ignore[assignment]
        v = self.spec.var_of.get(path)
        out: Optional[dict[bytes, int]] = None
        if v is not None:
            d = sol.D[v.id]
            if dsize(d) <= SMALL_DOMAIN:
                out = {node.text(node.decode(k)).encode(): k for k in sol.feasible_values(v.id)}
            elif node.kind == "enum":  # indices: never numeric (interval) mode; feasibility per prefix
                out = EnumTexts({node.text(node.decode(k)).encode(): k for k in dvalues(d)}, sol, v.id)
        elif node.kind == "enum":
            out = {node.text(x).encode(): k for k, x in enumerate(node.values)}
        elif node.lo is not None and node.hi is not None and node.hi - node.lo < SMALL_DOMAIN:
            out = {node.text(node.decode(k)).encode(): k for k in range(node.lo, node.hi + 1)}
        if len(self._texts_cache) > 100_000:
            self._texts_cache.clear()
        self._texts_cache[key] = out
        return out

    def _units_exist(self, path: tuple, sol: Any, lo: Any, hi: Any) -> bool:
        """Is some feasible value of the numeric scalar within [lo, hi] (units, maybe infinite)?"""
        node: Scalar = self.node_at(path)  # type: ignore[assignment]
        v = self.spec.var_of.get(path)
        if v is not None:
            d = sol.D[v.id]
            a = max(dmin(d), lo) if lo != -math.inf else dmin(d)
            b = min(dmax(d), hi) if hi != math.inf else dmax(d)
            if a > b:
                return False
            return sol.exists(v.id, (int(a), int(b)))
        a = lo if node.lo is None else max(node.lo, lo)
        b = hi if node.hi is None else min(node.hi, hi)
        return a <= b

    def _step_of(self, node: Scalar) -> Optional[Fraction]:
        if node.kind == "number":
            return None
        return Fraction(node.step)

    def _num_viable(self, path: tuple, sol: Any, p: bytes) -> bool:
        if not _NUM_PREFIX.fullmatch(p) or p == b"":
            return p == b""
        node: Scalar = self.node_at(path)  # type: ignore[assignment]
        step = self._step_of(node)
        neg = p.startswith(b"-")
        body = p[1:] if neg else p
        if b"." in body:
            ip, fp = body.split(b".", 1)
            if not ip:
                return False
            if step is not None:
                dec = _decimals(step)
                if len(fp) > dec or dec == 0:
                    return False
            width = Fraction(1, 10 ** len(fp))
            v0 = Fraction((ip + b"." + fp).decode()) if fp else Fraction(ip.decode())
            excl = fp == b"" or fp.endswith(b"0")
            ivs: list[tuple[Fraction, bool, Any, bool]] = [(v0, not excl, v0 + width, False)]
        elif body == b"":
            ivs = [(Fraction(0), True, math.inf, False)]
        elif body == b"0":
            ivs = [(Fraction(0), True, Fraction(1), False)]
        else:
            x = int(body)
            ivs = []
            bound = self._abs_bound(path, sol, step, neg)
            if bound is None:
                return True  # unbounded free number: any well-formed prefix continues
            k = 0
            while x * 10 ** k <= bound:
                ivs.append((Fraction(x * 10 ** k), True, Fraction((x + 1) * 10 ** k), False))
                k += 1
            if not ivs:
                return False
        if neg:
            ivs = [(-hi, hc, -lo, lc and lo != 0) for lo, lc, hi, hc in ivs]
        if step is None:
            return self._free_number_in(node, ivs)
        for lo, lc, hi, hc in ivs:
            ulo = -math.inf if lo == -math.inf else (math.ceil(lo / step) if lc else math.floor(lo / step) + 1)
            uhi = math.inf if hi == math.inf else (math.floor(hi / step) if hc else math.ceil(hi / step) - 1)
            if ulo <= uhi and self._units_exist(path, sol, ulo, uhi):
                return True
        return False

    def _free_number_in(self, node: Scalar, ivs: list) -> bool:
        """Some value of the intervals (lo, lo closed, hi, hi closed) inside the node's bounds:
        decimals are dense, so a non-empty intersection holds a canonical decimal text."""
        for lo, lc, hi, hc in ivs:
            if node.nlo is not None and (node.nlo > lo or (node.nlo == lo and node.nlo_open)):
                lo, lc = node.nlo, not node.nlo_open
            if node.nhi is not None and (node.nhi < hi or (node.nhi == hi and node.nhi_open)):
                hi, hc = node.nhi, not node.nhi_open
            if lo < hi or (lo == hi and lc and hc and not (node.non_integer and lo.denominator == 1)):
                return True  # a non-empty interval holds non-integer decimals too
        return False

    def _abs_bound(self, path: tuple, sol: Any, step: Optional[Fraction], neg: bool = False) -> Optional[Fraction]:
        """Largest magnitude of the values of that sign (None: unbounded)."""
        node: Scalar = self.node_at(path)  # type: ignore[assignment]
        v = self.spec.var_of.get(path)
        if v is not None:
            assert step is not None  # a solver variable has a finite domain, so a step
            d = sol.D[v.id]
            return max(abs(dmin(d)), abs(dmax(d))) * step
        if step is None:  # a free number: its bounds are values
            if neg:
                return None if node.nlo is None else max(-node.nlo, Fraction(0))
            return None if node.nhi is None else max(node.nhi, Fraction(0))
        # one-sided bounds still bound one sign: minimum -1 leaves only -1 among the negatives
        if neg:
            return None if node.lo is None else max(-node.lo, 0) * step
        return None if node.hi is None else max(node.hi, 0) * step

    def _num_end(self, path: tuple, sol: Any, p: bytes) -> Optional[int]:
        """Internal value if the number text `p` can end here, else None."""
        if not p or p in (b"-",) or not _NUM_PREFIX.fullmatch(p) or p.endswith(b"."):
            return None
        node: Scalar = self.node_at(path)  # type: ignore[assignment]
        val = Fraction(p.decode())
        if format_decimal(val if val.denominator != 1 else int(val)).encode() != p:
            return None
        step = self._step_of(node)
        if step is None:
            return 0 if node.number_within(val) else None
        q = val / step
        if q.denominator != 1:
            return None
        k = q.numerator
        return k if self._units_exist(path, sol, k, k) else None

    # -- transitions -----------------------------------------------------------------------------
    def step(self, configs: Iterable[Config], b: int) -> frozenset:
        """The configurations after writing byte `b` (empty: the byte is not allowed)."""
        out: list[Config] = []
        for cfg in configs:
            self._step_one(cfg, b, out)
        if self.unique:
            out = [c for c in out if self._distinct_ok(c)]
        return frozenset(out)

    # -- uniqueItems in the text ------------------------------------------------------------------
    def _fed(self, stack: tuple, b: int) -> tuple:
        """`stack` with byte `b` (consumed by its top task) added to the text of each item under way."""
        if not self.unique:
            return stack
        at = [i for i, t in enumerate(stack) if t[0] == "U"]
        if not at:
            return stack
        x = _BYTE[b]
        out = list(stack)
        for i in at:
            out[i] = _fed_item(out[i], x)
        return tuple(out)

    def _risky(self, stack: tuple) -> bool:
        """May some item under way still equal an earlier item of its array (a non-empty `near`)?"""
        for t in stack:
            if t[0] == "U" and t[5]:
                return True
            elif t[0] == "W" and t[3]:  # an item about to start (after its separator)
                return True
        return False

    def _distinct_ok(self, cfg: Config) -> bool:
        """Can every item under way still end distinct from the earlier items of its array (and the
        record still end)? Items are compared as values (unique_values): while no item's text may
        still become an earlier item's value (`near` empty for every 'U' task), every completion the
        automaton allows is distinct (a later item of a text_unique array is only started where a
        distinct one exists: this same check at its start, and spec.unique_relations made sure
        minItems distinct items exist). Until then the search follows, byte by byte, the texts on
        which some item may still become an earlier value; `could_equal` is True only on a prefix
        of a text of that value, so the search is bounded by the earlier items' lengths."""
        if not self._risky(cfg[0]):
            return True
        hit = self._distinct_cache.get(cfg)
        if hit is not None:
            return hit
        ok = False
        todo = [cfg]
        visited = {cfg}
        while todo and not ok:
            c = todo.pop()
            for b in self._probe_bytes(c):
                res: list = []
                self._step_one(c, b, res)
                for o in res:
                    if not self._risky(o[0]):
                        ok = True
                        break
                    if o not in visited:
                        visited.add(o)
                        todo.append(o)
                if ok:
                    break
        if len(self._distinct_cache) > 100_000:
            self._distinct_cache.clear()
        self._distinct_cache[cfg] = ok
        return ok

    def _probe_bytes(self, cfg: Config) -> Iterable[int]:
        """The bytes `_distinct_ok`'s search tries from `cfg`: those `next_bytes` says may come next
        (a literal's one byte, an enum's few), else every byte, the ones likeliest to make an item
        differ first (`_PROBE_ORDER`). Why: the search asks whether SOME byte sequence reaches a
        configuration no earlier item can equal, so the order of its bytes never changes the answer,
        only how soon it is found; trying all 256 bytes at each literal byte, and the control bytes
        first inside strings, made it most of the mask time of text-unique arrays."""
        nb = self.next_bytes((cfg,), limit=256)
        if nb is None:
            return _PROBE_ORDER
        return sorted(b for b in nb if b >= 0)

    def canonical(self, path: tuple) -> bool:
        """Is the value at `path` inside an item of a text_unique array (its strings are then written
        with the escapes JSON requires only, as json.dumps does, so equal items have equal texts)?"""
        hit = self._canon_cache.get(path)
        if hit is None:
            hit = False
            for j in range(len(path)):
                parent = self.node_at(path[:j])
                if isinstance(parent, Arr) and parent.text_unique:
                    hit = True
                    break
            self._canon_cache[path] = hit
        return hit

    def _step_one(self, cfg: Config, b: int, out: list) -> None:
        stack, sol = cfg
        if not stack:
            return
        top = stack[-1]
        kind = top[0]
        if kind == "L":
            lit = top[1]
            if lit[0] == b:
                out.extend(self.expand((self._fed(stack[:-1], b) + (("L", lit[1:]),), sol)))
            return
        if kind == "S":
            path, p = top[1], top[2]
            # end the value here, then feed b to what follows
            for c in self._ended(cfg):
                self._step_one(c, b, out)
            np_ = p + bytes([b])
            texts = self._texts(path, sol)
            if texts is not None:
                if _viable_texts(texts, np_):
                    out.append((self._fed(stack[:-1], b) + (("S", path, np_),), sol))
            elif self._num_viable(path, sol, np_):
                out.append((self._fed(stack[:-1], b) + (("S", path, np_),), sol))
            return
        if kind == "R":
            lang = self.node_at(top[1]).lang  # type: ignore[union-attr]
            assert lang is not None  # an 'R' task is only started for a string with a pattern
            if self.unique and (top[4] or b == 0x5C) and self.canonical(top[1]):
                cps = canonical_escape(top[4], top[5], b)
                if cps is False or (cps is not None and not any(lang.step(top[2], top[3], cp) >= 0 for cp in cps)):
                    return
            nxt = regex_byte(lang, top, b)
            if nxt is None:
                return
            stack = self._fed(stack, b)  # (only for a byte the task takes)
            if nxt == "end":
                out.extend(self.expand((stack[:-1], sol)))
            else:
                out.append((stack[:-1] + (nxt,), sol))
            return
        if kind == "T":
            nxt = self._string_byte(top, b)
            if nxt is None:
                return
            stack = self._fed(stack, b)  # (only for a byte the task takes)
            if nxt == "end":
                out.extend(self.after_close(stack, sol))
            else:
                out.append((stack[:-1] + (nxt,), sol))
        elif kind == "K":
            obj: Obj = self.node_at(top[1])  # type: ignore[assignment]
            nxt = key_byte(obj.keys, top, b)
            if nxt is None:
                return
            stack = self._fed(stack, b)  # (only for a byte the task takes)
            if nxt[0] == "end":
                # below the key: its separator, its value (by the patterns the key matches), then
                # the members task; record the key there
                below = stack[:-1]
                i = len(below) - 3
                e = below[i]
                assert e[0] == "E" and below[i + 1][0] == "V"
                vpath = top[1] + (("+", obj.keys.index_at(nxt[2])),)  # type: ignore[union-attr]
                below = below[:i] + (("E", e[1], e[2], e[3] | {nxt[1]}), ("V", vpath)) + below[i + 2:]
                out.extend(self.expand((below, sol)))
            else:
                out.append((stack[:-1] + (nxt,), sol))
        elif kind == "X":
            nxt = self._key_byte(top, b)
            if nxt is None:
                return
            stack = self._fed(stack, b)  # (only for a byte the task takes)
            if nxt[0] == "end":
                out.extend(self.after_close(stack, sol, nxt[1]))
            else:
                out.append((stack[:-1] + (nxt,), sol))

    def after_close(self, stack: tuple, sol: Any, key: Optional[str] = None) -> list[Config]:
        """The configurations after the closing quote of the string body on top of `stack` (already
        fed the quote): a 'T' value's, or with `key` an 'X' extra key's, recorded as used in the
        members task below its separator and value. No check here (minLength, a key declared or
        used): `_step_one` makes those, and `string_masks` asks this for the text after the quote."""
        below = stack[:-1]
        if key is not None:
            i = len(below) - 3
            e = below[i]
            assert e[0] in ("E", "G")  # an open object's members, or an any-value's in a unique item
            below = below[:i] + ((e[0], e[1], e[2], e[3] | {key}),) + below[i + 1:]
        return self.expand((below, sol))

    def _ended(self, cfg: Config) -> tuple:
        """The configurations after ending the scalar whose text is under way at the top of `cfg`
        (empty where it cannot end there), kept per configuration: `_end_scalar` is a pure function
        of it (the solver State memoises its answers; a budget hit raises before anything is kept)."""
        hit = self._ended_cache.get(cfg)
        if hit is None:
            ended = self._end_scalar(cfg[0], cfg[1])
            hit = tuple(self.expand(ended)) if ended is not None else ()
            if len(self._ended_cache) >= ENDED_CACHE_ENTRIES:
                self._ended_cache.clear()
            self._ended_cache[cfg] = hit
        return hit

    def _end_scalar(self, stack: tuple, sol: Any) -> Optional[Config]:
        top = stack[-1]
        path, p = top[1], top[2]
        texts = self._texts(path, sol)
        k: Optional[int]
        if texts is not None:
            if p not in texts:
                return None
            k = texts[p]
        else:
            k = self._num_end(path, sol, p)
            if k is None:
                return None
        v = self.spec.var_of.get(path)
        if v is not None:
            sol = sol.assign(v.id, k)
            if sol is None:
                return None
        return (stack[:-1], sol)

    def _string_byte(self, top: tuple, b: int) -> Any:
        _, path, nchars, esc, pend = top
        node: Scalar = self.node_at(path)  # type: ignore[assignment]
        mx = node.max_len
        if pend:
            # pend = bytes still due + 10 * (range rule of the next one: no overlong forms,
            # no surrogates, nothing past U+10FFFF; see _CONT)
            lo, hi = _CONT[pend // 10]
            return ("T", path, nchars, esc, pend % 10 - 1) if lo <= b <= hi else None
        if esc and self.unique and self.canonical(path):
            # only the escapes json.dumps writes: \" \\ \b \f \n \r \t, else \u00XX (lowercase)
            # for the other control characters; esc 6: the last digit after \u001
            if esc == 1:
                return ("T", path, nchars + 1, 0 if b in _CANON_ESC else 5, 0) \
                    if b in _CANON_ESC or b == ord("u") else None
            if esc in (5, 4):
                return ("T", path, nchars, esc - 1, 0) if b == 0x30 else None
            if esc == 3:
                return ("T", path, nchars, 2 if b == 0x30 else 6, 0) if b in (0x30, 0x31) else None
            if esc == 6:
                return ("T", path, nchars, 0, 0) if b in _LOWER_HEX else None
            return ("T", path, nchars, 0, 0) if b in _LOWER_HEX and b not in b"89acd" else None
        if esc == 1:
            if b in _ESC:
                return ("T", path, nchars + 1, 0, 0)
            if b == ord("u"):
                return ("T", path, nchars + 1, 5, 0)
            return None
        if esc >= 2:
            if b not in _HEX:
                return None
            return ("T", path, nchars, 0 if esc == 2 else esc - 1, 0)
        if b == 0x22:  # closing quote
            return "end" if nchars >= node.min_len else None
        room = mx is None or nchars < mx
        if b == 0x5C:
            return ("T", path, nchars, 1, 0) if room else None
        if b < 0x20 or not room:
            return None
        if b < 0x80:
            return ("T", path, nchars + 1, 0, 0)
        if 0xC2 <= b <= 0xDF:
            return ("T", path, nchars + 1, 0, 1)
        if 0xE0 <= b <= 0xEF:
            return ("T", path, nchars + 1, 0, 2 + (10 if b == 0xE0 else 20 if b == 0xED else 0))
        if 0xF0 <= b <= 0xF4:
            return ("T", path, nchars + 1, 0, 3 + (30 if b == 0xF0 else 40 if b == 0xF4 else 0))
        return None

    # -- queries ----------------------------------------------------------------------------------
    def is_final(self, configs: Iterable[Config]) -> bool:
        """Can the record end here? (Also inside a root-level scalar whose text can end, e.g. `true`.)"""
        for cfg in configs:
            stack, sol = cfg
            if not stack:
                return True
            if len(stack) == 1 and stack[-1][0] == "S":
                if any(not s for s, _ in self._ended(cfg)):
                    return True
        return False

    def next_bytes(self, configs: Iterable[Config], limit: int = 2) -> Optional[set[int]]:
        """The bytes that may come next; None when more than `limit` are possible (cheap exit)."""
        out: set[int] = set()
        for cfg in configs:
            stack, sol = cfg
            if not stack:
                continue
            top = stack[-1]
            if top[0] == "L":
                out.add(top[1][0])
            elif top[0] in ("X", "K", "R"):
                return None
            elif top[0] == "T":
                node: Scalar = self.node_at(top[1])  # type: ignore[assignment]
                if top[3] == 0 and top[4] == 0 and node.max_len is not None and top[2] >= node.max_len:
                    out.add(0x22)
                else:
                    return None
            else:
                texts = self._texts(top[1], sol)
                if texts is None:
                    return None
                p = top[2]
                if isinstance(texts, EnumTexts):
                    out |= texts.next_bytes(p)
                for t in texts if not isinstance(texts, EnumTexts) else ():
                    if t.startswith(p) and len(t) > len(p):
                        out.add(t[len(p)])
                if p in texts:
                    ended = self._ended(cfg)
                    if ended:
                        nb = self.next_bytes(ended, limit)
                        if nb is None:
                            return None
                        out |= nb
                        if any(not s for s, _ in ended):
                            out.add(-1)  # the record can end here
            if len(out) > limit:
                return None
        return out

    def forced_text(self, configs: frozenset, max_bytes: int = 4096) -> tuple[bytes, frozenset, bool]:
        """The text every valid record continues with from here, the state after it, and whether
        the record is then complete."""
        buf = bytearray()
        while len(buf) < max_bytes:
            if self.is_final(configs):
                # complete only when nothing can follow (a root scalar such as `1` may go on to `10`)
                return bytes(buf), configs, len(configs) == 1 and not next(iter(configs))[0]
            nb = self.next_bytes(configs, limit=1)
            if nb is None or len(nb) != 1 or -1 in nb:
                break
            b = next(iter(nb))
            nxt = self.step(configs, b)
            if not nxt:
                break
            buf.append(b)
            configs = nxt
        return bytes(buf), configs, False

    def witness_text(self, configs: frozenset) -> Optional[bytes]:
        """Text of one valid completion (the solver's witness), for drafting priors: the shortest
        (then bytewise least) over the configurations, so every process drafts the same branch
        (a frozenset's order follows hashes, which differ between processes)."""
        texts = [self.spec.canonical_text(self.spec.record_from_assignment(sol.witness)).encode()
                 for _stack, sol in configs if sol is not None]
        return min(texts, key=lambda t: (len(t), t)) if texts else None


class EnumTexts(dict):
    """The texts of an enum slot whose domain is too large to ask every value's feasibility up
    front (text -> enum index, over the values its domain still holds). Why: an enum's internal
    values are indices, so it can never fall back to numeric (interval) text; instead a prefix is
    viable when some value whose text extends it is feasible, one `sol.exists` over that set
    (memoised by the state), like the interval mode's ranges. Ending on a text assigns its index,
    which the solver confirms."""

    def __init__(self, items: dict[bytes, int], sol: Any, vid: int) -> None:
        super().__init__(items)
        self.sol = sol
        self.vid = vid

    def viable(self, prefix: bytes) -> bool:
        ks = frozenset(k for t, k in self.items() if t.startswith(prefix))
        return bool(ks) and self.sol.exists(self.vid, ks)

    def next_bytes(self, prefix: bytes) -> set[int]:
        by: dict[int, set[int]] = {}
        for t, k in self.items():
            if t.startswith(prefix) and len(t) > len(prefix):
                by.setdefault(t[len(prefix)], set()).add(k)
        return {b for b, ks in by.items() if self.sol.exists(self.vid, frozenset(ks))}


def _viable_texts(texts: dict[bytes, int], prefix: bytes) -> bool:
    if isinstance(texts, EnumTexts):
        return texts.viable(prefix)
    return any(t.startswith(prefix) for t in texts)


def decode_byte(esc: int, acc: Any, b: int) -> Any:
    """One byte of a JSON string body, decoded: ("end",) for the closing quote, ("char", cp) when a
    character completes, ("part", esc, acc, lo, hi) inside an escape or UTF-8 sequence (lo..hi: the
    code points it can still become), None if the byte is not JSON.

    esc: 0 clean, 1 after a backslash, 10+k inside \\u with k hex digits read (acc: their value),
    20+k inside a UTF-8 sequence with k bytes to go (acc: (bits so far, lowest, highest code
    point): no overlong forms, nothing past U+10FFFF)."""
    if esc == 0:
        if b == 0x22:
            return _END
        if b == 0x5C:  # every escape (short or \\u) writes a BMP character
            return ("part", 1, 0, 0, 0xFFFF)
        if b < 0x20:
            return None
        if b < 0x80:
            return ("char", b)
        if 0xC2 <= b <= 0xDF:
            st: tuple = (b & 0x1F, 0x80, 0x7FF)
            k = 1
        elif 0xE0 <= b <= 0xEF:
            st, k = (b & 0x0F, 0x800, 0xFFFF), 2
        elif 0xF0 <= b <= 0xF4:
            st, k = (b & 0x07, 0x10000, TOP - 1), 3
        else:
            return None
        return _utf8_part(st, k)
    if esc == 1:
        cp = _SHORT_ESC.get(b)
        if cp is not None:
            return ("char", cp)
        return ("part", 10, 0, 0, 0xFFFF) if b == ord("u") else None
    if esc >= 20:
        if not 0x80 <= b <= 0xBF:
            return None
        v, lo, hi = acc
        v = v << 6 | (b & 0x3F)
        k = esc - 21
        if k == 0:
            return ("char", v) if lo <= v <= hi else None
        return _utf8_part((v, lo, hi), k)
    h = _HEXVAL.get(b)
    if h is None:
        return None
    v = acc * 16 + h
    k = esc - 10 + 1  # hex digits read
    if k == 4:
        return ("char", v)
    width = 16 ** (4 - k)
    return ("part", 10 + k, v, v * width, v * width + width - 1)


_END = ("end",)


def _utf8_part(st: tuple, k: int) -> Optional[tuple]:
    v, lo, hi = st
    a, b = max(lo, v << 6 * k), min(hi, (v << 6 * k) | ((1 << 6 * k) - 1))
    return ("part", 20 + k, st, a, b) if a <= b else None


_CTRL_U = tuple(c for c in range(0x20) if c not in (8, 9, 10, 12, 13))  # written \u00XX by json.dumps


def canonical_escape(esc: int, acc: Any, b: int) -> Any:
    """Byte `b` in the `decode_byte` state (esc, acc) of a canonical string (the escapes json.dumps
    writes only): False if not allowed there, else the code points the escape it opens or
    continues can still become (None: no escape under way after it)."""
    if esc == 0:
        return (*range(0x20), 0x22, 0x5C) if b == 0x5C else None
    if esc == 1:
        return _CTRL_U if b == ord("u") else None if b in _CANON_ESC else False
    if esc in (10, 11):
        return _CTRL_U if b == 0x30 else False
    if esc == 12:
        return tuple(c for c in _CTRL_U if (c >> 4) == b - 0x30) if b in (0x30, 0x31) else False
    if esc == 13:
        return None if b in _LOWER_HEX and (acc * 16 + int(chr(b), 16)) in _CTRL_U + tuple(range(0x10, 0x20)) \
            else False
    return None


def _fed_item(t: tuple, x: bytes) -> tuple:
    """A 'U' task after byte `x`: the earlier values its text may still equal are kept."""
    raw = t[4] + x
    near = t[5]
    if near:
        near = frozenset(v for v in near if could_equal(raw, v))
    return ("U", t[1], t[2], t[3], raw, near)


def _any_text_unique(node: LayoutNode) -> bool:
    seen: set[int] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Arr):
            if n.text_unique:
                return True
            todo.append(n.item)
        elif isinstance(n, Obj):
            todo += [f.node for f in n.fields]
            if n.extra is not None:
                todo += [n.extra] if n.keys is None else list(n.keys.values)
        elif n.kind in ("union", "ref"):
            todo += n.alts
    return False


def regex_byte(lang: StringLang, top: tuple, b: int) -> Any:
    """One byte of a string body whose decoded value must be in `lang` (a pattern within length
    bounds): the next ('R', path, q, n, esc, acc) task, "end" (the closing quote), or None.

    q is the DFA state after n characters (n saturated where only minLength matters), esc/acc the
    escape or UTF-8 state (`decode_byte`). A byte is allowed only if some code point it can still
    become is a live next character, so no prefix is a dead end; lone surrogates are never written."""
    _, path, q, n, esc, acc = top
    d = decode_byte(esc, acc, b)
    if d is None:
        return None
    if d[0] == "char":
        t = lang.step(q, n, d[1])
        return None if t < 0 else ("R", path, t, lang.norm(n + 1), 0, 0)
    if d[0] == "end":
        return "end" if lang.can_end(q, n) else None
    return ("R", path, q, n, d[1], d[2]) if lang.range_live(q, n, d[3], d[4]) else None


def key_byte(keys: Any, top: tuple, b: int) -> Any:
    """One byte of an extra member's key in an object with patternProperties/propertyNames: the key
    must be in the key language (`KeySpace`), neither declared nor used in this object. The
    next ('K', path, q, n, esc, acc, key, used) task (key: the decoded prefix), ("end", key, q), or
    None. A byte is allowed only if some key of the language that is not excluded still extends
    the text (a count of completions against the excluded keys with that prefix)."""
    _, path, q, n, esc, acc, key, used = top
    d = decode_byte(esc, acc, b)
    if d is None:
        return None
    lang = keys.lang
    if d[0] == "end":
        ok = lang.can_end(q, n) and key not in used and key not in keys.declared
        return ("end", key, q) if ok else None
    excluded = keys.declared | used
    if d[0] == "char":
        t = lang.step(q, n, d[1])
        if t < 0:
            return None
        nk = key + chr(d[1])
        n1 = lang.norm(n + 1)
        return ("K", path, t, n1, 0, 0, nk, used) if keys.open_after(t, n1, nk, excluded) else None
    if keys.range_open(q, n, key, excluded, d[3], d[4]):
        return ("K", path, q, n, d[1], d[2], key, used)
    return None


_SHORT_ESC = {ord('"'): 0x22, ord("\\"): 0x5C, ord("/"): 0x2F, ord("b"): 8, ord("f"): 12, ord("n"): 10,
              ord("r"): 13, ord("t"): 9}
_HEXVAL = {ord(c): int(c, 16) for c in "0123456789abcdefABCDEF"}
_ANY_STRING = Scalar("", "string")
_ANY_NUMBER = Scalar("", "number")


def _sub_node(node: Scalar, p: Any) -> LayoutNode:
    """The node one path element below a union, a reference node or an any-value."""
    if node.kind in ("union", "ref"):
        return node.alts[p[1]]
    assert node.kind == "any", node.kind
    return _ANY_STRING if p in ("#s", ("+s",)) else _ANY_NUMBER if p == "#n" else node


def _decimals(step: Fraction) -> int:

    d = 0
    while (step * 10 ** d).denominator != 1:
        d += 1
        if d > 30:
            break
    return d
