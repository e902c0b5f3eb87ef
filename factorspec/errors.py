"""Errors FactorSpec raises. Each names what is at fault so a caller can show it as is."""
from __future__ import annotations

MAX_MESSAGE = 1000  # characters of one error message (a relation of 10^4 characters is not echoed whole)


def bounded(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` cut in the middle to about `limit` characters: the head names what is at fault,
    the tail usually says why (a parse error's position), so both are kept."""
    if len(text) <= limit:
        return text
    head, tail = limit * 6 // 10, limit * 3 // 10
    return f"{text[:head]} ... ({len(text) - head - tail} characters elided) ... {text[-tail:]}"


class FactorSpecError(Exception):
    """Base class of every error FactorSpec raises on purpose. Its text is bounded in length
    (MAX_MESSAGE); the attributes keep the full parts."""

    def __str__(self) -> str:
        return bounded(super().__str__())


class SpecError(FactorSpecError):
    """The spec document is malformed or uses something unsupported.

    `pointer` is the JSON Pointer of the offending schema node (or relation)."""

    def __init__(self, pointer: str, message: str) -> None:
        self.pointer = pointer or "/"
        self.message = message
        super().__init__(f"{self.pointer}: {message}")


class EmptySchema(SpecError):
    """A schema node admits no value at all (contradictory keywords, `false`, an enum that no
    value of its type survives). Where the node is optional (a property not required, an
    alternative of a union, the items of an array that may be empty) it is left out exactly."""


class RelationError(SpecError):
    """A relation does not parse or does not type-check."""

    def __init__(self, relation: str, message: str, pointer: str = "") -> None:
        self.relation = relation
        super().__init__(pointer or "/x-factorspec/relations", f"relation {relation!r}: {message}")


class Unsatisfiable(FactorSpecError):
    """No record satisfies the spec (or the spec given the prefix written so far)."""

    def __init__(self, message: str, relations: list[str] | None = None, minimal: bool = True) -> None:
        self.relations = list(relations or [])
        self.minimal = minimal  # False: `relations` conflict, but the budget ended before a minimal set
        super().__init__(message)


class BudgetExceeded(FactorSpecError):
    """A search hit its explicit budget (nodes or time); no domain is guessed."""

    def __init__(self, what: str, limit: float, used: float) -> None:
        self.what, self.limit, self.used = what, limit, used
        super().__init__(f"budget exceeded: {what} limit {limit} (used {used})")


class InputLimitError(FactorSpecError):
    """An input document breaks a named limit (size, digits, nesting; factorspec.graph.limits),
    found before any work on it begins."""

    def __init__(self, limit: str, value: int, message: str) -> None:
        self.limit, self.value = limit, value
        named = f" (limit {limit} = {value})" if value else ""
        super().__init__(f"{message}{named}")
