"""Input limits, checked before any work begins, and bounded messages.

Every limit has a name and a value so an error can say which one a document broke. JSON is read
here (not with a bare `json.loads`) so that the interpreter's own limits (4,300 digits per
integer, the C recursion limit) come out as a `InputLimitError` naming the limit instead of a
`ValueError` or `RecursionError` traceback.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from factorspec.errors import InputLimitError

MAX_INPUT_BYTES = 64 * 1024 * 1024  # one spec or record document (a 10^6-item record is ~3-7 MB)
MAX_NUMBER_DIGITS = sys.get_int_max_str_digits()  # digits of one JSON integer (CPython's own limit)
MAX_DEPTH = 256  # nesting of arrays/objects in one document
MAX_MESSAGE_VALUE = 120  # characters of one value or expression echoed in a message
MAX_VIOLATIONS = 10_000  # violations one check lists (a 10^6-item record of bad items: the first ones)


def elide(text: str, limit: int = MAX_MESSAGE_VALUE) -> str:
    """`text` cut to about `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    head = max(limit - 30, 10)
    return f"{text[:head]}... ({len(text) - head} more characters)"


def _parse_constant(s: str) -> Any:
    raise InputLimitError("JSON", 0, f"{s} is not a JSON number")


def depth_of(doc: Any) -> int:
    """Nesting depth of a parsed JSON value (iterative: never recurses)."""
    best, stack = 0, [(doc, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            x = list(x.values())
        if isinstance(x, list):
            if d > best:
                best = d
            if d > MAX_DEPTH:
                return d
            stack.extend((y, d + 1) for y in x if isinstance(y, (dict, list)))
    return best


def check_depth(doc: Any) -> None:
    """Raise InputLimitError if `doc` nests deeper than MAX_DEPTH."""
    if depth_of(doc) > MAX_DEPTH:
        raise InputLimitError("MAX_DEPTH", MAX_DEPTH, "the document nests arrays/objects too deeply")


def load_json(text: str | bytes) -> Any:
    """Parse one JSON document within the limits above (its nesting is checked by the caller
    that walks it recursively: `check_depth`).

    Raises InputLimitError (a limit broken, named) or json.JSONDecodeError (not JSON)."""
    if len(text) > MAX_INPUT_BYTES:
        raise InputLimitError("MAX_INPUT_BYTES", MAX_INPUT_BYTES, f"the document has {len(text)} bytes")
    try:
        return json.loads(text, parse_constant=_parse_constant)
    except RecursionError:
        raise InputLimitError("MAX_DEPTH", MAX_DEPTH, "the document nests arrays/objects too deeply") from None
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError):
            raise
        if "digits" in str(e):  # CPython's int(str) limit, hit inside the decoder
            raise InputLimitError("MAX_NUMBER_DIGITS", MAX_NUMBER_DIGITS,
                                  "an integer has more digits than allowed") from None
        raise InputLimitError("JSON", 0, elide(str(e))) from None
