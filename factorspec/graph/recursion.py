"""Recursive `$ref`: a layout that is a graph, and the depth policy that keeps its masks exact.

A `$ref` met again while its own target is being compiled becomes a reference node,
`Scalar(kind="ref", alts=[target])`, linked to the target's layout node once that is compiled
(`RefTable`): the target is compiled once per unfolding and shared, so the template is a finite
graph with cycles. Everything that walks the template by a record's value (validation, canonical
text, the text machine) follows the link lazily; the grounder never descends into it (a relation
that names a field through a reference node is refused, naming the relation and the pointer).

Depth policy (docs/spec.md): a recursive schema's texts are the valid instances that nest arrays
and objects at most `MAX_DEPTH` levels deep (limits.py; the depth `depth_of` measures, free JSON
values included), so the language is depth-bounded and the masks stay exact: a container, an
optional field, one more item, an alternative or an extra member is allowed only where some
complete instance fits in the depth left (`Heights`: the smallest height of an instance of each
node, a least fixpoint over the graph). A schema whose recursion admits no finite instance has
infinite height and is reported as admitting no value (`EmptySchema`), never a dead end.
Non-recursive schemas are unchanged (no depth bound is imposed on them).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph.limits import MAX_DEPTH
from factorspec.graph.objects import ObjectRules
from factorspec.graph.schema import Arr, LayoutNode, Obj, Scalar

INF = 1 << 60  # the height of a node without a finite instance


class RefTable:
    """The reference nodes of one compile: `placeholder` while the target is being compiled,
    `bind` once it is (every placeholder of that reference made meanwhile then points at it)."""

    def __init__(self) -> None:
        self._pending: dict[str, list[Scalar]] = {}
        self.made = 0

    def placeholder(self, ref: str, ptr: str) -> Scalar:
        node = Scalar(ptr, "ref")
        self._pending.setdefault(ref, []).append(node)
        self.made += 1
        return node

    def link(self, target: LayoutNode, ptr: str) -> Scalar:
        """A reference node to a target compiled before (shared: `SchemaCompiler._referenced`)."""
        self.made += 1
        return Scalar(ptr, "ref", alts=[target])

    def bind(self, ref: str, target: LayoutNode) -> None:
        for node in self._pending.pop(ref, []):
            node.alts = [target]

    def drop(self, ref: str) -> None:
        """The target failed to compile: its placeholders belong to discarded nodes."""
        self._pending.pop(ref, None)


def children(node: LayoutNode) -> list[LayoutNode]:
    if isinstance(node, Obj):
        out = [f.node for f in node.fields]
        if node.extra is not None:
            out += node.keys.values if node.keys is not None else [node.extra]
        return out
    if isinstance(node, Arr):
        return [node.item]
    return list(node.alts) if node.kind in ("union", "ref") else []


def has_refs(root: LayoutNode) -> bool:
    return any(isinstance(n, Scalar) and n.kind == "ref" for n in _nodes(root))


def _nodes(root: LayoutNode) -> list[LayoutNode]:
    return _nodes_from([root])


def _nodes_from(roots: list[LayoutNode]) -> list[LayoutNode]:
    """Every node reachable from `roots`, each once, children before parents where the graph allows
    (an iterative post-order: no recursion on deep layouts)."""
    seen: set[int] = {id(r) for r in roots}
    order: list[LayoutNode] = []
    stack: list[tuple[LayoutNode, int]] = [(r, 0) for r in reversed(roots)]
    while stack:
        node, i = stack.pop()
        kids = children(node)
        if i < len(kids):
            stack.append((node, i + 1))
            k = kids[i]
            if id(k) not in seen:
                seen.add(id(k))
                stack.append((k, 0))
        else:
            order.append(node)
    return order


class Heights:
    """The smallest height of an instance of every node of a recursive layout (a scalar 0, an
    array or object 1 + its tallest forced part), and for each union the alternative a smallest
    instance takes (well-founded: it was final before the union was)."""

    def __init__(self, root: LayoutNode, max_depth: int = MAX_DEPTH) -> None:
        self.root = root
        self.max_depth = max_depth
        self._nodes = _nodes(root)
        self.h: dict[int, int] = {id(n): INF for n in self._nodes}
        self.witness: dict[int, int] = {}
        self._variants: dict[tuple[int, int, bool], ObjectRules] = {}
        changed = True
        while changed:  # Gauss-Seidel in post-order: values only decrease, so this ends
            changed = False
            for n in self._nodes:
                v = self._height(n)
                if v < self.h[id(n)]:
                    self.h[id(n)] = v
                    changed = True

    def of(self, node: LayoutNode) -> int:
        return self.h[id(node)]

    def _height(self, n: LayoutNode) -> int:
        if isinstance(n, Arr):
            if n.min_items == 0:
                return 1
            h = self.of(n.item) if n.contains is None else max(self.of(n.item_alt(0)), self.of(n.item))
            return INF if h >= INF else 1 + h
        if isinstance(n, Obj):
            if n.rules is not None:
                return self._rules_height(n)
            hs = [self.of(f.node) for f in n.fields if f.required]
            top = max(hs, default=0)
            return INF if top >= INF else 1 + top
        if n.kind == "ref":
            return self.of(n.alts[0]) if n.alts else INF
        if n.kind == "union":
            best, arg = INF, -1
            for i, a in enumerate(n.alts):
                if self.of(a) < best:
                    best, arg = self.of(a), i
            if arg >= 0 and best < self.h[id(n)]:
                self.witness[id(n)] = arg
            return best
        return 0

    def extra_height(self, obj: Obj) -> int:
        """The height of an extra member's value (patterned keys: all the same, `check`)."""
        if obj.extra is None:
            return INF
        vals = obj.keys.values if obj.keys is not None else [obj.extra]
        return min(self.of(v) for v in vals)

    def _rules_height(self, n: Obj) -> int:
        hs = sorted({self.of(f.node) for f in n.fields} | {0, self.extra_height(n)} - {INF})
        for t in hs:
            if self.rules_within(n, t).viable(0, 0, 0):
                return 1 + t
        return INF

    def rules_within(self, obj: Obj, budget: int) -> ObjectRules:
        """The object's rules with every part taller than `budget` left out (never present; no extra
        members if their values do not fit)."""
        rules = obj.rules
        assert rules is not None
        forbidden = 0
        for j, f in enumerate(obj.fields):
            if self.of(f.node) > budget:
                forbidden |= 1 << j
        open_ = rules.open_ and self.extra_height(obj) <= budget
        key = (id(obj), forbidden, open_)
        hit = self._variants.get(key)
        if hit is None:
            hit = self._variants[key] = rules if not forbidden and open_ == rules.open_ else \
                dataclasses.replace(rules, forbidden=forbidden, open_=open_)
        return hit

    def alternative(self, union: Scalar) -> LayoutNode:
        """The alternative a smallest instance of the union takes."""
        return union.alts[self.witness.get(id(union), 0)]


def check(root: LayoutNode, refs: RefTable) -> None:
    """After compiling a schema with reference nodes: refuse what the text machine cannot make
    exact, and a root without a finite instance within MAX_DEPTH."""
    if not refs.made:
        return
    hs = Heights(root)
    inside = _nodes_from([n for n in hs._nodes if isinstance(n, Scalar) and n.kind == "ref"])
    for n in inside:
        if isinstance(n, Obj) and n.keys is not None and n.extra is not None:
            vals = {hs.of(v) for v in n.keys.values}
            if len(vals) > 1 and any(v > 0 for v in vals):
                raise SpecError(f"{n.pointer}/patternProperties", "patternProperties whose value schemas nest to "
                                "different depths are not supported inside a recursive schema")
    h = hs.of(root)
    if h >= INF:
        raise EmptySchema(root.pointer, "the recursive schema admits no finite value (every instance would "
                          "nest forever)")
    if h > MAX_DEPTH:
        raise EmptySchema(root.pointer, f"the smallest value of the recursive schema nests {h} levels deep, more "
                          f"than MAX_DEPTH = {MAX_DEPTH}")


def recursive_part(node: Optional[LayoutNode]) -> Optional[Scalar]:
    """The reference node, if `node` is one (relations never name fields through it)."""
    return node if isinstance(node, Scalar) and node.kind == "ref" else None
