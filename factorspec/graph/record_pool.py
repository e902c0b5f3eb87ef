"""Valid records found by earlier questions, kept to answer later ones without a search.

Why: along a decoding walk most feasibility questions ask about states that earlier searches
have already shown records for (a walk narrows one slot at a time, and each search's record
extends many of the states that follow). A record that satisfies every factor and lies within a
state's domains is a record of that state, so finding one in the pool proves a value feasible
exactly as a search would; the pool never refutes anything (a value no pooled record has still
goes to the search). Bounded: the most recent `SIZE` records, scanned newest first.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, Optional

from factorspec.graph.domain import dcontains

SIZE = 64


class RecordPool:
    """The most recent valid records (complete assignments of internal values) of one problem."""

    def __init__(self, size: int = SIZE) -> None:
        self._records: deque[tuple] = deque(maxlen=size)
        self._lock = threading.Lock()  # engines may ask one problem from several threads

    def add(self, record: list) -> None:
        """Keep `record`, which must satisfy every factor (a search's or a backend's checked
        solution)."""
        t = tuple(record)
        with self._lock:
            if not self._records or self._records[-1] != t:
                self._records.append(t)

    def _newest_first(self) -> list[tuple]:
        with self._lock:
            return list(reversed(self._records))

    def within(self, D: list, first: Optional[int] = None) -> Iterator[tuple]:
        """The pooled records whose every value lies in D, newest first; `first`: a variable
        to test before the others (the one a question has just restricted, where most records
        fail)."""
        for r in self._newest_first():
            if first is not None and not dcontains(D[first], r[first]):
                continue
            if all(dcontains(d, k) for d, k in zip(D, r)):
                yield r

    def find(self, D: list, first: Optional[int] = None) -> Optional[list]:
        """One pooled record within D (the newest), or None."""
        for r in self.within(D, first):
            return list(r)
        return None

    def __len__(self) -> int:
        return len(self._records)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled empty (results only, found again on demand), without its lock."""
        return {"size": self._records.maxlen}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["size"])  # type: ignore[misc]
