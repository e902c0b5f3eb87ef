"""Property-count and dependency rules of one object: minProperties, maxProperties,
dependentRequired (and `dependencies` in its array form), exactly.

The layout writes an object's declared fields in order, deciding each present or absent, then (open
objects only) any number of extra members. `ObjectRules` answers, at field j with the set of
declared fields present so far, whether a choice still leads to a complete object: the reachable
counts of the remaining fields are computed by a memoised search over the fields that dependencies
tie together (a set of counts as an int bitmask, so a gap such as "a and b together or neither" is
exact), so the text machine never lets an object end with too few members or dead-end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

MAX_TIED_FIELDS = 20  # fields named by dependencies: the search state is a mask over these


@dataclass(eq=False)
class ObjectRules:
    """Rules over the n declared fields (by index) of one object; `open_` = extra members allowed.

    `deps[i]` is the bitmask of the fields that field i's presence requires (dependentRequired);
    `required` the bitmask of required fields."""

    nfields: int
    required: int
    min_props: int = 0
    max_props: Optional[int] = None
    deps: dict[int, int] = field(default_factory=dict)
    open_: bool = False
    forbidden: int = 0  # fields that may never be present (recursion.py: too deep to fit)

    def __post_init__(self) -> None:
        self._memo: dict[tuple[int, int], int] = {}
        tied = 0
        for s, t in self.deps.items():
            tied |= (1 << s) | t
        self._tied = tied
        # bits that matter after position j: tied fields before j (a present source forces a later
        # target; an absent target forbids a later source)
        self._keep = [tied & ((1 << j) - 1) for j in range(self.nfields + 1)]

    # -- one field's choice -------------------------------------------------------------------------
    def may_be_present(self, j: int, mask: int) -> bool:
        """Field j's own dependencies allow it: no field it requires was left out before it."""
        if self.forbidden >> j & 1:
            return False
        t = self.deps.get(j, 0) & ((1 << j) - 1)
        return t & mask == t

    def may_be_absent(self, j: int, mask: int) -> bool:
        """Field j is neither required nor required by a field present before it."""
        if self.required >> j & 1:
            return False
        bit = 1 << j
        return not any(s < j and mask >> s & 1 and t & bit for s, t in self.deps.items())

    def counts(self, j: int, mask: int) -> int:
        """Bitmask of the numbers of fields j.. that can still be present (bit c: c more)."""
        if j >= self.nfields:
            return 1
        key = (j, mask & self._keep[j])
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = 0
        if self.may_be_present(j, mask):
            out |= self.counts(j + 1, mask | (1 << j)) << 1
        if self.may_be_absent(j, mask):
            out |= self.counts(j + 1, mask)
        self._memo[key] = out
        return out

    def fits(self, total: int) -> bool:
        """Can an object whose declared fields number `total` be completed?"""
        if self.max_props is not None and total > self.max_props:
            return False
        return self.open_ or total >= self.min_props

    def viable(self, j: int, mask: int, n: int) -> bool:
        """Can the object go on from field j (n declared fields written, `mask` of them present)?"""
        c = self.counts(j, mask)
        k = 0
        while c:
            if c & 1 and self.fits(n + k):
                return True
            c >>= 1
            k += 1
        return False

    def constrains(self) -> bool:
        """False when the rules allow every object the plain layout allows."""
        if self.deps:
            return True
        if self.min_props > bin(self.required).count("1"):
            return True
        if self.max_props is not None and (self.open_ or self.max_props < self.nfields):
            return True
        return False


def minimal_members(rules: ObjectRules) -> tuple[int, int]:
    """(mask of the declared fields present, number of extra members) of a smallest valid object:
    each field left out where the rules still allow completing, extras only to reach minProperties."""
    mask = n = 0
    for j in range(rules.nfields):
        if rules.may_be_absent(j, mask) and rules.viable(j + 1, mask, n):
            continue
        mask |= 1 << j
        n += 1
    return mask, max(0, rules.min_props - n) if rules.open_ else 0


def fresh_keys(declared: set[str], k: int) -> list[str]:
    """k extra member keys that are not declared ("x0", "x1", ...)."""
    out: list[str] = []
    i = 0
    while len(out) < k:
        if f"x{i}" not in declared:
            out.append(f"x{i}")
        i += 1
    return out


def dependency_violations(rules: ObjectRules, keys: list[str], value: dict, n_members: int) -> list[str]:
    """Messages for the ways the members of `value` break the rules (declared field keys in order)."""
    out = []
    if n_members < rules.min_props:
        out.append(f"{n_members} properties, fewer than minProperties {rules.min_props}")
    if rules.max_props is not None and n_members > rules.max_props:
        out.append(f"{n_members} properties, more than maxProperties {rules.max_props}")
    for s, t in rules.deps.items():
        if keys[s] in value:
            missing = [keys[i] for i in range(rules.nfields) if t >> i & 1 and keys[i] not in value]
            if missing:
                out.append(f"property {keys[s]!r} requires {missing} (dependentRequired)")
    return out


def rule_fields(machine: Any, rest: tuple, top: tuple, sol: Any) -> list:
    """The text machine's expansion of ('P', path, j, n, mask): an object with rules at field j.

    Like the plain ('O', ...) task, one configuration per allowed choice (present: the key and the
    value; absent: on to the next field), each kept only when `ObjectRules.viable` says the object
    can still be completed; after the last field, the extra members (open) or the closing brace."""
    import json

    _, path, j, n, mask = top
    node = machine.node_at(path)
    rules: ObjectRules = machine.rules_at(path, node)
    if j == len(node.fields):
        if node.extra is not None:
            return [(rest + (("E", path, n, frozenset()),), sol)]
        return [(rest + (("L", b"}"),), sol)]
    f = node.fields[j]
    out = []
    if rules.may_be_present(j, mask) and rules.viable(j + 1, mask | (1 << j), n + 1):
        head = (machine.sep if n else b"") + json.dumps(f.key, ensure_ascii=False).encode() + machine.key_sep
        out.append((rest + (("P", path, j + 1, n + 1, mask | (1 << j)), ("V", path + (f.key,)), ("L", head)), sol))
    if rules.may_be_absent(j, mask) and rules.viable(j + 1, mask, n):
        out.append((rest + (("P", path, j + 1, n, mask),), sol))
    return out
