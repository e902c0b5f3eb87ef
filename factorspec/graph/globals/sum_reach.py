"""Exact reachability of a sum over lines of small slots: the sums a subtotal can take.

Why: `subtotal == sum(lines[*].amount)` with `amount == qty * price[item]` and distinct items
is a subset-sum: only some subtotals are reachable (48,692 of the 138,889 cent values below an
invoice's budget for 10 lines of 14 items), and interval reasoning cannot prove that a total of
exactly 1500.00 is out of reach: the own search and CP-SAT both pass a 40 s budget on it.
A dynamic program over the reachable sums answers it in milliseconds: each line's possible
contributions are enumerated once from its few small slots (its rows), and the sums are bit
sets (Python ints, bit k = sum k in integer units), so a line costs one shift-or per value.

Two shapes:
  * independent lines: the sum ranges over the convolution of every line's contributions;
  * keyed lines: one slot per line (its key) is in an `all_different` over the lines, so each
    key value is used by at most one line, and exactly one per line; the program runs over
    the key values (use none or one of its contributions), counting lines. Where lines differ
    it unites their contributions per key value, a relaxation (sound, not always exact);
    where they are interchangeable, as an invoice's lines are, it is exact.
Propagation narrows the sum's slot to the least and greatest reachable value within its domain
(a wipe-out where none is). It never decides (`ev` is true): the factors still do, exactly.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional

from factorspec.graph.domain import Domains, Narrowing, dclip, dmax, dmin
from factorspec.graph.expr import Abstract, Node, U, Var

MAX_BITS = 1 << 22  # sums wider than this many integer units are left to bounds reasoning

Row = tuple[tuple[tuple[int, int], ...], Fraction]  # ((var id, internal value), ...), contribution


class SumReach(Node):
    """Implied node: `s == const + sum of one row's contribution per line` (module docstring).
    `lines[i]` lists line i's rows; `keys[i]` is the var id of line i's key (keyed shape) or
    None for every line (independent shape); `key_value` maps a key var's internal value to the
    value `all_different` compares."""

    kind = "bool"
    __slots__ = ("s", "const", "lines", "keys", "scale", "_rows", "_memo", "_bits")

    def __init__(self, s: Var, const: Fraction, lines: list[list[Row]], keys: Optional[list[tuple[int, Var]]]) -> None:
        self.s = s
        self.const = Fraction(const)
        self.lines = lines
        self.keys = keys
        den = Fraction(s.step).denominator
        for rows in lines:
            for _r, c in rows:
                den = math.lcm(den, c.denominator)
        den = math.lcm(den, self.const.denominator)
        self.scale = den  # contributions in integer units of 1/den
        vs = {s.id}
        # per line, its rows grouped by the value of their first slot (a key, an item): (that
        # slot, {value: [(the other slots' values, key value, contribution in units)]}), built
        # once in integers, so that a value out of its slot's domain skips its rows at once
        self._rows: list[tuple[int, dict[int, list[tuple[tuple[tuple[int, int], ...], Any, int]]]]] = []
        for i, rows in enumerate(lines):
            kv = keys[i] if keys is not None else None
            lead = kv[0] if kv is not None else rows[0][0][0][0]
            groups: dict[int, list[tuple[tuple[tuple[int, int], ...], Any, int]]] = {}
            for r, c in rows:
                vs.update(v for v, _k in r)
                rd = dict(r)
                key = kv[1].value(rd[kv[0]]) if kv is not None else None
                rest = tuple((v, k) for v, k in r if v != lead)
                groups.setdefault(rd[lead], []).append((rest, key, int(c * den)))
            self._rows.append((lead, groups))
        self.vars = frozenset(vs)
        self._memo: dict[tuple, Optional[tuple[int, int]]] = {}
        self._bits: dict[tuple, int] = {}  # (the lines' live structure, width) -> reachable bits

    def fwd(self, D: Domains) -> Abstract:
        return U

    def ev(self, A: list) -> Any:
        return 1

    def _live(self, D: Domains) -> Optional[list[list[tuple[Any, int]]]]:
        """Per line, (key value or None, contribution in units) of its rows still in D."""
        out = []
        for lead, groups in self._rows:
            live = []
            ld = D[lead]
            for kl, rows in groups.items():
                if not (kl in ld if isinstance(ld, frozenset) else ld[0] <= kl <= ld[1]):
                    continue
                for r, key, u in rows:
                    for v, k in r:
                        d = D[v]
                        if not (k in d if isinstance(d, frozenset) else d[0] <= k <= d[1]):
                            break
                    else:
                        live.append((key, u))
            if not live:
                return None
            out.append(live)
        return out

    def reach(self, D: Domains) -> Optional[tuple[int, int, int]]:
        """(bit set of reachable sums minus `base`, base, width) in units, or None if no row fits."""
        live = self._live(D)
        if live is None:
            return None
        n = len(live)
        m0 = min(u for line in live for _k, u in line)
        base = n * m0 + int(self.const * self.scale)
        hi_units = dmax(D[self.s.id]) * Fraction(self.s.step) * self.scale - base  # bits above: no use
        width = int(hi_units) + 1 if hi_units >= 0 else 0
        if width <= 0:
            return 0, base, 0
        if width > MAX_BITS:
            return -1, base, width  # too wide: left to bounds reasoning
        if self.keys is None:
            # independent lines reach their least and greatest sums (each line's least or
            # greatest row): a window that holds both learns nothing from the program
            least = sum(min(u for _k, u in line) for line in live) - n * m0
            most = sum(max(u for _k, u in line) for line in live) - n * m0
            lo_units = dmin(D[self.s.id]) * Fraction(self.s.step) * self.scale - base
            if lo_units <= least and most < width:
                return (1 << least) | (1 << most), base, width
            sets = tuple(frozenset(u - m0 for _k, u in line) for line in live)
            sig: tuple = (sets, width)
            bits = self._bits.get(sig)
            if bits is None:
                bits = _convolve(1, sets, (1 << width) - 1)
        else:
            per_key: dict[Any, set[int]] = {}
            must: set[Any] = set()
            for line in live:
                ks = {k for k, _u in line}
                if len(ks) == 1:
                    must |= ks
                for k, u in line:
                    per_key.setdefault(k, set()).add(u - m0)
            if len(must) > n or len(per_key) < n:
                return 0, base, width
            opt = tuple(sorted(((repr(k), frozenset(us)) for k, us in per_key.items() if k not in must)))
            fixed = tuple(sorted(frozenset(per_key[k]) for k in must))  # each used by its own line
            sig = (opt, fixed, n, width)
            bits = self._bits.get(sig)
            if bits is None:
                mask = (1 << width) - 1
                bits = _convolve(_choose([us for _k, us in opt], n - len(must), mask), fixed, mask)
        if len(self._bits) > 4096:
            self._bits.clear()
        self._bits[sig] = bits
        return bits, base, width

    def bounds(self, D: Domains) -> Optional[tuple[int, int]]:
        """(least, greatest) internal value of s reachable within its domain, or None."""
        key = tuple(D[v] for v in sorted(self.vars))
        if key in self._memo:
            return self._memo[key]
        out = None
        got = self.reach(D)
        if got is not None:
            bits, base, _w = got
            if bits < 0:
                self._memo[key] = (dmin(D[self.s.id]), dmax(D[self.s.id]))
                return self._memo[key]
            st = Fraction(self.s.step) * self.scale  # units per internal step of s
            d = D[self.s.id]
            lo_b = max(0, math.ceil(dmin(d) * st - base))
            if bits >> lo_b:
                window = bits >> lo_b << lo_b
                least = (window & -window).bit_length() - 1 + base
                most = window.bit_length() - 1 + base
                out = (math.ceil(Fraction(least) / st), math.floor(Fraction(most) / st))
        if len(self._memo) > 2048:
            self._memo.clear()
        self._memo[key] = out
        return out

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        b = self.bounds(C.D)
        if b is None or b[0] > b[1]:
            return False
        return C.set(self.s.id, dclip(C.D[self.s.id], b[0], b[1]))


def _convolve(bits: int, sets: Any, mask: int) -> int:
    """The sums of a sum in `bits` plus one value of each set (bit sets of non-negative units)."""
    for us in sets:
        nxt = 0
        for u in us:
            nxt |= bits << u
        bits = nxt & mask
        if not bits:
            break
    return bits


def _choose(sets: list[frozenset[int]], n: int, mask: int) -> int:
    """The sums of one value from each of exactly `n` of `sets` (each set used at most once)."""
    if n < 0 or n > len(sets):
        return 0
    reach = [0] * (n + 1)
    reach[0] = 1
    for j, us in enumerate(sets):
        left = len(sets) - j - 1  # sets after this one
        for c in range(min(j, n - 1), -1, -1):  # downwards: reach[c] is still without set j
            r = reach[c]
            if not r or c + 1 + left < n:  # too few sets left to reach n
                continue
            acc = 0
            for u in us:
                acc |= r << u
            reach[c + 1] |= acc & mask
    return reach[n]
