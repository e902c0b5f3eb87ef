"""A user's own requests: the JSONL format `factorspec run --requests` reads, parsed and checked
before any model is loaded, so a bad line is a clear error naming the line and the field.

One request a line:
  id          optional (default: the line number)
  prompt      text, or
  messages    chat messages [{"role", "content"}, ...] rendered with the model's chat template
  spec        a spec document inline (object), or a path (relative to the requests file)
  max_tokens  optional, default 512
  temperature, top_p, top_k, seed   optional sampling settings (temperature 0 or absent: greedy)
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from factorspec.errors import FactorSpecError

DEFAULT_MAX_TOKENS = 512
KNOWN_KEYS = ("id", "prompt", "messages", "spec", "max_tokens", "temperature", "top_p", "top_k", "seed")
MAX_LINE_BYTES = 8 << 20


class RequestsFileError(FactorSpecError):
    """A requests file that cannot be served as written (the message names line and field)."""


@dataclass(frozen=True)
class UserRequest:
    """One parsed request line. `spec` is the spec document itself (paths already read)."""

    id: str
    spec: Any
    prompt: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    spec_source: str = "inline"  # "inline" or the path the spec was read from


def _fail(where: str, msg: str) -> RequestsFileError:
    return RequestsFileError(f"{where}: {msg}")


def _number(obj: dict, key: str, where: str, default: float, lo: float, hi: float, lo_open: bool = False) -> float:
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return_type = type(v).__name__
        raise _fail(where, f"'{key}' must be a number, got {return_type}")
    if not (lo < v <= hi if lo_open else lo <= v <= hi):
        raise _fail(where, f"'{key}' must be in {'(' if lo_open else '['}{lo}, {hi}], got {v}")
    return float(v)


def _integer(obj: dict, key: str, where: str, default: int | None, lo: int) -> int | None:
    v = obj.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(where, f"'{key}' must be an integer, got {type(v).__name__}")
    if v < lo:
        raise _fail(where, f"'{key}' must be >= {lo}, got {v}")
    return v


def _spec(obj: dict, where: str, base_dir: str) -> tuple[Any, str]:
    if "spec" not in obj:
        raise _fail(where, "missing 'spec' (a spec document, or a path to one)")
    s = obj["spec"]
    if isinstance(s, dict):
        return s, "inline"
    if not isinstance(s, str) or not s:
        raise _fail(where, f"'spec' must be an object or a path, got {type(s).__name__}")
    path = s if os.path.isabs(s) else os.path.join(base_dir, s)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        raise _fail(where, f"'spec' file not found: {path}") from None
    except (OSError, ValueError, RecursionError) as e:
        raise _fail(where, f"'spec' file {path} is not readable JSON: {type(e).__name__}: {str(e)[:200]}") from None
    if isinstance(doc, dict) and "spec" in doc and isinstance(doc["spec"], dict):  # a natural-plan --to-specs file
        doc = doc["spec"]
    return doc, path


def _messages(obj: dict, where: str) -> tuple[tuple[str, str], ...]:
    m = obj["messages"]
    if not isinstance(m, list) or not m:
        raise _fail(where, "'messages' must be a non-empty list of {\"role\", \"content\"} objects")
    out = []
    for k, msg in enumerate(m):
        if not (isinstance(msg, dict) and isinstance(msg.get("role"), str) and isinstance(msg.get("content"), str)):
            raise _fail(where, f"'messages'[{k}] must be an object with string 'role' and 'content'")
        if msg["role"] not in ("system", "user", "assistant"):
            raise _fail(where, f"'messages'[{k}].role must be system, user or assistant, got {msg['role']!r}")
        out.append((msg["role"], msg["content"]))
    return tuple(out)


def parse_request(obj: Any, where: str, base_dir: str, default_id: str) -> UserRequest:
    """One request object -> UserRequest, or RequestsFileError naming `where` and the field."""
    if not isinstance(obj, dict):
        raise _fail(where, f"a request must be a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(KNOWN_KEYS))
    if unknown:
        raise _fail(where, f"unknown field(s) {unknown}; known: {', '.join(KNOWN_KEYS)}")
    has_p, has_m = "prompt" in obj, "messages" in obj
    if has_p == has_m:
        raise _fail(where, "give exactly one of 'prompt' (text) or 'messages' (chat)")
    prompt = obj["prompt"] if has_p else None
    if has_p and (not isinstance(prompt, str) or not prompt):
        raise _fail(where, "'prompt' must be a non-empty string")
    rid = obj.get("id", default_id)
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        raise _fail(where, "'id' must be a string or an integer")
    spec, source = _spec(obj, where, base_dir)
    max_tokens = _integer(obj, "max_tokens", where, DEFAULT_MAX_TOKENS, 1)
    assert max_tokens is not None
    return UserRequest(
        id=str(rid), spec=spec, prompt=prompt, messages=_messages(obj, where) if has_m else None,
        max_tokens=max_tokens,
        temperature=_number(obj, "temperature", where, 0.0, 0.0, 100.0),
        top_p=_number(obj, "top_p", where, 1.0, 0.0, 1.0, lo_open=True),
        top_k=_integer(obj, "top_k", where, 0, 0) or 0,
        seed=_integer(obj, "seed", where, None, 0),
        spec_source=source,
    )


def load_requests(path: str) -> list[UserRequest]:
    """Every request of a JSONL file (blank lines skipped); the first bad line raises."""
    base = os.path.dirname(os.path.abspath(path))
    out: list[UserRequest] = []
    seen: dict[str, int] = {}
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise RequestsFileError(f"{path}: cannot read: {e.strerror or e}") from None
    with fh:
        for n, line in enumerate(fh, 1):
            where = f"{path}:{n}"
            if len(line) > MAX_LINE_BYTES:
                raise _fail(where, f"line longer than {MAX_LINE_BYTES} bytes")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as e:
                raise _fail(where, f"not valid JSON: {str(e)[:200]}") from None
            r = parse_request(obj, where, base, default_id=str(n))
            if r.id in seen:
                raise _fail(where, f"duplicate id {r.id!r} (first on line {seen[r.id]})")
            seen[r.id] = n
            out.append(r)
    if not out:
        raise RequestsFileError(f"{path}: no requests")
    return out
