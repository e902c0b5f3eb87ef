"""The relation language: a readable string form, a JSON AST form, and the parser between them.

The AST is plain nested dicts/lists so that it is JSON-serialisable as is:
  {"const": V} | {"name": N} | {"op": OP, "args": [...], ...extra}
Grounding (binding index variables, resolving paths to record slots) happens in `ground.py`.
"""
from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

from factorspec.errors import RelationError

Ast = dict[str, Any]

CMP_OPS = ("==", "!=", "<=", ">=", "<", ">")
FUNCS = ("sum", "count", "min", "max", "all_different", "len", "first", "last", "abs", "round",
         "has", "present", "set", "no_overlap", "all", "any")

_TOKEN_RE = re.compile(
    r"""\s*(?:
      (?P<num>\d+\.\d+|\d+)
    | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op>\.\.|==|!=|<=|>=|=>|//|\[\*\]|[-+*/%<>()\[\],.:])
    | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
    )""",
    re.VERBOSE,
)
_PY_CONSTANTS = {"True": "true", "False": "false", "None": "null"}
_HINTS = (("&&", "write 'and'"), ("||", "write 'or'"), ("!", "write 'not' (or '!=')"),
          ("=", "write '==' to compare (or '=>' for implies)"), ("{", "write a list [a, b, c] for a set of values"))
KEYWORDS = {"forall", "exists", "and", "or", "not", "implies", "in", "for", "if", "else", "true", "false", "null",
            "is"}


def _lex(text: str) -> list[tuple[str, Any]]:
    pos = 0
    out: list[tuple[str, Any]] = []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            rest = text[pos:].lstrip()
            for bad, hint in _HINTS:
                if rest.startswith(bad):
                    raise ValueError(f"{bad!r} is not in the language ({hint}) at offset {len(text) - len(rest)}")
            raise ValueError(f"unexpected character {text[pos:pos + 10]!r} at offset {pos}")
        if m.group("op") == "*" and text.startswith("*", m.end()):
            raise ValueError(f"'**' is not in the language (there is no power: write a product, x * x) "
                             f"at offset {m.start('op')}")
        pos = m.end()
        if m.group("num") is not None:
            s = m.group("num")
            out.append(("num", Fraction(s) if "." in s else int(s)))
        elif m.group("str") is not None:
            s = m.group("str")
            if s[0] == "'":
                s = '"' + s[1:-1].replace('\\"', '"').replace('"', '\\"') + '"'
            out.append(("str", json.loads(s)))
        elif m.group("op") is not None:
            out.append(("op", m.group("op")))
        else:
            name = m.group("name")
            name = _PY_CONSTANTS.get(name, name)  # Python's True/False/None
            out.append(("kw" if name in KEYWORDS else "name", name))
    out.append(("end", None))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _lex(text)
        self.i = 0

    def peek(self, k: int = 0) -> tuple[str, Any]:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, kind: str, value: Any = None, k: int = 0) -> bool:
        t = self.peek(k)
        return t[0] == kind and (value is None or t[1] == value)

    def take(self, kind: str, value: Any = None) -> Any:
        t = self.peek()
        if t[0] != kind or (value is not None and t[1] != value):
            want = value if value is not None else kind
            got = t[1] if t[0] != "end" else "end of relation"
            raise ValueError(f"expected {want!r}, got {got!r}")
        self.i += 1
        return t[1]

    def parse(self) -> Ast:
        e = self.expr()
        if not self.at("end"):
            raise ValueError(f"unexpected {self.peek()[1]!r} after a complete expression")
        return e

    def expr(self) -> Ast:
        if self.at("kw", "forall") or self.at("kw", "exists"):
            kind = self.take("kw")
            names = [self.take("name")]
            while self.at("op", ","):
                self.take("op", ",")
                names.append(self.take("name"))
            rng = None
            if self.at("kw", "in"):
                self.take("kw", "in")
                rng = self.range_()
            self.take("op", ":")
            return {"op": kind, "vars": names, "range": rng, "body": self.expr()}
        return self.conditional()

    def conditional(self) -> Ast:
        """`A if C else B` (Python's form and precedence: below `implies`)."""
        then = self.implies()
        if self.at("kw", "if"):
            self.take("kw", "if")
            cond = self.implies()
            self.take("kw", "else")
            return {"op": "if", "args": [cond, then, self.conditional()]}
        return then

    def range_(self) -> Ast:
        if self.at("name", "range") and self.at("op", "(", 1):  # Python's range(b) / range(a, b): a..b
            self.i += 2
            first = self.arith()
            if self.at("op", ","):
                self.take("op", ",")
                bounds = [first, self.arith()]
            else:
                bounds = [{"const": 0}, first]
            self.take("op", ")")
            return {"op": "range", "args": bounds}
        lo = self.arith()
        if self.at("op", ".."):
            self.take("op", "..")
            return {"op": "range", "args": [lo, self.arith()]}
        return {"op": "indices", "args": [lo]}

    def implies(self) -> Ast:
        left = self.or_()
        if self.at("kw", "implies") or self.at("op", "=>"):
            self.i += 1
            return {"op": "implies", "args": [left, self.expr()]}
        return left

    def or_(self) -> Ast:
        args = [self.and_()]
        while self.at("kw", "or"):
            self.take("kw", "or")
            args.append(self.and_())
        return args[0] if len(args) == 1 else {"op": "or", "args": args}

    def and_(self) -> Ast:
        args = [self.not_()]
        while self.at("kw", "and"):
            self.take("kw", "and")
            args.append(self.not_())
        return args[0] if len(args) == 1 else {"op": "and", "args": args}

    def not_(self) -> Ast:
        if self.at("kw", "not") and not self.at("kw", "in", 1):
            self.take("kw", "not")
            return {"op": "not", "args": [self.not_()]}
        return self.compare()

    def compare(self) -> Ast:
        left = self.arith()
        t = self.peek()
        if t[0] == "op" and t[1] in CMP_OPS:
            self.i += 1
            right = self.arith()
            node = {"op": t[1], "args": [left, right]}
            parts = [node]
            while self.at("op") and self.peek()[1] in CMP_OPS:  # Python's chain: 1 <= x <= 5
                op = self.take("op")
                nxt = self.arith()
                parts.append({"op": op, "args": [right, nxt]})
                right = nxt
            return node if len(parts) == 1 else {"op": "and", "args": parts}
        if self.at("kw", "is"):  # Python's `x is None` / `x is not None`: == null / != null
            self.take("kw", "is")
            op = "=="
            if self.at("kw", "not"):
                self.take("kw", "not")
                op = "!="
            if not self.at("kw", "null"):
                raise ValueError("'is' compares with None only (x is None, x is not None); write '==' otherwise")
            self.take("kw", "null")
            return {"op": op, "args": [left, {"const": None}]}
        negate = False
        if self.at("kw", "not") and self.at("kw", "in", 1):
            self.i += 1
            negate = True
        if self.at("kw", "in"):
            self.take("kw", "in")
            if self.at("op", "["):
                container = self.list_literal()
            elif self.at("op", "("):  # Python's tuple of values: x in (1, 2, 3)
                container = self.list_literal("(", ")")
            else:  # a table, or an array of the record: `x in xs`, `x in xs[*]`, `x in t[0].ys`
                if not self.at("name"):
                    raise ValueError("'in' needs a table, an array path or a [list] on its right")
                container = self.postfix()
            node = {"op": "in", "args": [left, container]}
            return {"op": "not", "args": [node]} if negate else node
        if negate:
            raise ValueError("expected 'in' after 'not'")
        return left

    def list_literal(self, open_: str = "[", close: str = "]") -> Ast:
        self.take("op", open_)
        items = []
        while not self.at("op", close):
            items.append(self.arith())
            if len(items) == 1 and open_ == "[" and self.at("kw", "for"):  # [x for x in xs if ...]
                gen = self.gen_tail(items[0])
                self.take("op", close)
                return gen
            if not self.at("op", close):
                self.take("op", ",")
        self.take("op", close)
        return {"op": "list", "args": items}

    def arith(self) -> Ast:
        left = self.term()
        while self.at("op", "+") or self.at("op", "-"):
            op = self.take("op")
            left = {"op": op, "args": [left, self.term()]}
        return left

    def term(self) -> Ast:
        left = self.unary()
        while self.at("op", "*") or self.at("op", "//") or self.at("op", "%") or self.at("op", "/"):
            op = self.take("op")
            left = {"op": op, "args": [left, self.unary()]}
        return left

    def unary(self) -> Ast:
        if self.at("op", "-"):
            self.take("op", "-")
            inner = self.unary()
            if "const" in inner and isinstance(inner["const"], (int, Fraction)):
                return {"const": -inner["const"]}
            return {"op": "neg", "args": [inner]}
        return self.postfix()

    def postfix(self) -> Ast:
        node = self.primary()
        while True:
            if self.at("op", "[*]"):
                self.take("op", "[*]")
                node = {"op": "star", "args": [node]}
            elif self.at("op", "["):
                self.take("op", "[")
                idx = self.arith()
                self.take("op", "]")
                node = {"op": "index", "args": [node, idx]}
            elif self.at("op", "."):
                self.take("op", ".")
                attr = self.take("name")
                if self.at("op", "("):
                    raise ValueError(f"method calls such as .{attr}(...) are not in the language; write a "
                                     f"function over the items, e.g. count(x == 1 for x in xs)")
                node = {"op": "attr", "args": [node], "attr": attr}
            else:
                return node

    def primary(self) -> Ast:
        kind, val = self.peek()
        if kind == "num":
            self.i += 1
            return {"const": val}
        if kind == "str":
            self.i += 1
            return {"const": val}
        if kind == "kw" and val in ("true", "false", "null"):
            self.i += 1
            return {"const": {"true": True, "false": False, "null": None}[val]}
        if kind == "op" and val == "(":
            self.take("op", "(")
            items = [self.expr()]
            while self.at("op", ","):
                self.take("op", ",")
                items.append(self.expr())
            self.take("op", ")")
            return items[0] if len(items) == 1 else {"op": "tuple", "args": items}
        if kind == "op" and val == "[":
            return self.list_literal()
        if kind == "name":
            self.i += 1
            if self.at("op", "("):
                return self.call(val)
            return {"name": val}
        raise ValueError(f"unexpected {val!r}" if kind != "end" else "unexpected end of relation")

    def call(self, func: str) -> Ast:
        if func not in FUNCS:
            raise ValueError(f"unknown function {func!r} (known: {', '.join(FUNCS)})")
        self.take("op", "(")
        args: list[Ast] = []
        while not self.at("op", ")"):
            arg = self.expr()
            if self.at("kw", "for"):
                arg = self.gen_tail(arg)
            args.append(arg)
            if not self.at("op", ")"):
                self.take("op", ",")
        self.take("op", ")")
        return {"op": "call", "func": func, "args": args}


    def gen_tail(self, elem: Ast) -> Ast:
        """`ELEM for v, w in RANGE if COND`, after ELEM (in a call, or a list comprehension)."""
        self.take("kw", "for")
        names = [self.take("name")]
        while self.at("op", ",") and self.at("name", None, 1) and \
                (self.at("kw", "in", 2) or self.at("kw", "if", 2) or self.at("op", ")", 2)
                 or self.at("op", ",", 2) or self.at("op", "]", 2)):
            self.take("op", ",")
            names.append(self.take("name"))
        rng = None
        if self.at("kw", "in"):
            self.take("kw", "in")
            rng = self.range_()
        cond = None
        if self.at("kw", "if"):
            self.take("kw", "if")
            cond = self.or_()
        gen: Ast = {"op": "gen", "args": [elem], "range": rng, "cond": cond}
        if len(names) == 1:
            gen["var"] = names[0]
        else:
            gen["vars"] = names
        return gen


def parse(text: str, name: str = "") -> Ast:
    """Parse the readable form of a relation into its JSON AST."""
    if not isinstance(text, str) or not text.strip():
        raise RelationError(name or repr(text), "a relation must be a non-empty string or AST object")
    try:
        return _Parser(text).parse()
    except ValueError as e:
        raise RelationError(name or text, f"cannot parse {text!r}: {e}") from None
    except RecursionError:
        raise RelationError(name or text[:80], "relation nests too deeply") from None


def _const_to_json(v: Any) -> Any:
    if isinstance(v, Fraction):
        return {"decimal": format_decimal(v)}
    return v


def to_json(ast: Ast) -> Ast:
    """JSON-serialisable AST (decimals written as {"decimal": "0.01"} to stay exact)."""
    if "const" in ast:
        return {"const": _const_to_json(ast["const"])}
    out = dict(ast)
    for key in ("args",):
        if key in out:
            out[key] = [to_json(a) for a in out[key]]
    for key in ("body", "range", "cond"):
        if out.get(key) is not None:
            out[key] = to_json(out[key])
    return out


_ALLOWED_KEYS = {"const", "name", "op", "args", "vars", "range", "body", "var", "cond", "func", "attr", "path"}
# number of args of each op the parser produces: (min, max); None = any number
_ARITY: dict[str, tuple[int, Any]] = {
    **dict.fromkeys(CMP_OPS, (2, 2)),
    **dict.fromkeys(("+", "-", "*", "/", "//", "%", "in", "index", "range", "implies"), (2, 2)),
    "if": (3, 3),
    **dict.fromkeys(("not", "neg", "star", "attr", "indices", "gen"), (1, 1)),
    "and": (1, None), "or": (1, None), "tuple": (1, None), "list": (0, None), "call": (0, None),
    "forall": (0, 0), "exists": (0, 0),
}


def from_json(obj: Any, name: str = "relation") -> Ast:
    """Validate and normalise a JSON AST (the inverse of `to_json`)."""
    if not isinstance(obj, dict):
        raise RelationError(name, f"AST node must be an object, got {type(obj).__name__}")
    extra = set(obj) - _ALLOWED_KEYS
    if extra:
        raise RelationError(name, f"unknown AST keys {sorted(extra)}")
    if "path" in obj or ("var" in obj and "op" not in obj):
        return _short_form(obj, name)
    if "const" in obj:
        v = obj["const"]
        if isinstance(v, dict) and set(v) == {"decimal"}:
            try:
                v = Fraction(str(v["decimal"]))
            except (ValueError, ZeroDivisionError):
                raise RelationError(name, f"bad decimal {v['decimal']!r}") from None
        elif isinstance(v, float):
            v = Fraction(repr(v))
        elif not isinstance(v, (int, str, bool, type(None))):
            raise RelationError(name, f"unsupported constant {v!r}")
        return {"const": v}
    if "name" in obj and "op" not in obj:
        if not isinstance(obj["name"], str):
            raise RelationError(name, "name must be a string")
        return {"name": obj["name"]}
    op = obj.get("op")
    if not isinstance(op, str):
        raise RelationError(name, "AST node needs one of 'const', 'name', 'op'")
    out: Ast = {"op": op}
    args = obj.get("args", [])
    if not isinstance(args, list):
        raise RelationError(name, f"'args' of {op!r} must be a list")
    if "args" in obj or op not in ("forall", "exists"):  # the parser gives quantifiers no 'args'
        out["args"] = [from_json(a, name) for a in args]
    for key in ("body", "range", "cond"):
        if obj.get(key) is not None:
            out[key] = from_json(obj[key], name)
        elif key in obj:
            out[key] = None
    for key in ("vars", "var", "func", "attr"):
        if key in obj:
            out[key] = obj[key]
    if op not in _ARITY:
        raise RelationError(name, f"unknown operator {op!r}")
    lo, hi = _ARITY[op]
    n = len(out.get("args", []))
    if n < lo or (hi is not None and n > hi):
        raise RelationError(name, f"{op!r} takes {lo if lo == hi else f'{lo} or more'} argument(s), got {n}")
    if op == "call" and out.get("func") not in FUNCS:
        raise RelationError(name, f"unknown function {out.get('func')!r} (known: {', '.join(FUNCS)})")
    if op == "attr" and not isinstance(out.get("attr"), str):
        raise RelationError(name, "'attr' needs 'attr', a name")
    if op == "gen":
        gv = out.get("vars", [out.get("var")] if "var" in out else None)
        if not isinstance(gv, list) or not gv or not all(isinstance(v, str) for v in gv):
            raise RelationError(name, "'gen' needs 'var', a name (or 'vars', a list of names)")
        out.pop("var", None)
        out.pop("vars", None)
        if len(gv) == 1:
            out["var"] = gv[0]
        else:
            out["vars"] = gv
    if out.get("range") is not None and out["range"].get("op") not in ("range", "indices"):
        raise RelationError(name, "a 'range' must be a range (a..b) or an array path")
    if op in ("forall", "exists"):
        if not isinstance(out.get("vars"), list) or not all(isinstance(v, str) for v in out["vars"]):
            raise RelationError(name, f"{op} needs 'vars', a list of names")
        if "body" not in out or out["body"] is None:
            raise RelationError(name, f"{op} needs a 'body'")
        out.setdefault("range", None)
    return out


def _short_form(obj: dict, name: str) -> Ast:
    """The documented short forms: {"var": "i"} and {"path": [segment, ...]} (a segment is a
    property name, a constant index, "*" for every item, or an AST for a computed index)."""
    if "path" not in obj:
        if set(obj) != {"var"} or not isinstance(obj["var"], str) or not obj["var"]:
            raise RelationError(name, f"a variable node is {{\"var\": NAME}}, got {json.dumps(obj)[:60]}")
        return {"name": obj["var"]}
    if set(obj) != {"path"}:
        raise RelationError(name, f"a path node has only the key 'path', got keys {sorted(obj)}")
    segs = obj["path"]
    if not isinstance(segs, list) or not segs or not isinstance(segs[0], str) or segs[0] == "*":
        raise RelationError(name, "'path' must be a list starting with a property name, e.g. "
                                  "[\"itinerary\", {\"var\": \"i\"}, \"city\"]")
    node: Ast = {"name": segs[0]}
    for seg in segs[1:]:
        if seg == "*":
            node = {"op": "star", "args": [node]}
        elif isinstance(seg, str):
            node = {"op": "attr", "args": [node], "attr": seg}
        elif isinstance(seg, int) and not isinstance(seg, bool):
            node = {"op": "index", "args": [node, {"const": seg}]}
        elif isinstance(seg, dict):
            node = {"op": "index", "args": [node, from_json(seg, name)]}
        else:
            raise RelationError(name, f"path segment {seg!r} is not a property name, an integer index, "
                                      "\"*\" or an index expression")
    return node


def format_decimal(v: Fraction | int) -> str:
    """Shortest plain decimal text of an exact value (raises if it is not a finite decimal)."""
    if isinstance(v, int):
        return str(v)
    den = v.denominator
    scale = 0
    d = den
    while d % 10 == 0:
        d //= 10
        scale += 1
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        raise ValueError(f"{v} is not a finite decimal")
    scale += max(twos, fives)
    scaled = v * 10 ** scale
    assert scaled.denominator == 1
    n = scaled.numerator
    sign = "-" if n < 0 else ""
    digits = str(abs(n)).rjust(scale + 1, "0")
    intpart, frac = digits[: len(digits) - scale], digits[len(digits) - scale:]
    frac = frac.rstrip("0")
    return sign + intpart + ("." + frac if frac else "")


_PREC = {"if": 0, "implies": 1, "or": 2, "and": 3, "not": 4, "cmp": 5, "+": 6, "-": 6, "*": 7, "/": 7, "//": 7, "%": 7,
         "neg": 8}


def to_text(ast: Ast) -> str:
    """Readable form of an AST; `parse(to_text(a)) == a` for ASTs the parser produces."""
    return _text(ast, 0)


def _text(a: Ast, parent: int) -> str:
    if "const" in a:
        v = a["const"]
        if isinstance(v, bool):
            return "true" if v else "false"
        if v is None:
            return "null"
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        s = format_decimal(v)
        return f"({s})" if s.startswith("-") and parent > 0 else s
    if "name" in a:
        return a["name"]
    op, args = a["op"], a.get("args", [])

    def wrap(s: str, prec: int) -> str:
        return f"({s})" if prec < parent else s

    if op in ("forall", "exists"):
        rng = f" in {_text(a['range'], 9)}" if a.get("range") else ""
        return wrap(f"{op} {', '.join(a['vars'])}{rng}: {_text(a['body'], 0)}", 0)
    if op == "range":
        return f"{_text(args[0], 6)}..{_text(args[1], 6)}"
    if op == "indices":
        return _text(args[0], 9)
    if op == "implies":
        return wrap(f"{_text(args[0], 2)} implies {_text(args[1], 1)}", 1)
    if op in ("or", "and"):
        p = _PREC[op]
        return wrap(f" {op} ".join(_text(x, p + 1) for x in args), p)
    if op == "not":
        inner = args[0]
        if inner.get("op") == "in":
            return wrap(f"{_text(inner['args'][0], 6)} not in {_text(inner['args'][1], 9)}", 5)
        return wrap(f"not {_text(inner, 4)}", 4)
    if op in CMP_OPS:
        return wrap(f"{_text(args[0], 6)} {op} {_text(args[1], 6)}", 5)
    if op == "in":
        return wrap(f"{_text(args[0], 6)} in {_text(args[1], 9)}", 5)
    if op == "if":
        s = f"{_text(args[1], 2)} if {_text(args[0], 2)} else {_text(args[2], 1)}"
        return f"({s})" if parent > 0 else s
    if op in ("+", "-", "*", "/", "//", "%"):
        p = _PREC[op]
        return wrap(f"{_text(args[0], p)} {op} {_text(args[1], p + 1)}", p)
    if op == "neg":
        return wrap(f"-{_text(args[0], 8)}", 8)
    if op == "tuple":
        return "(" + ", ".join(_text(x, 0) for x in args) + ")"
    if op == "list":
        return "[" + ", ".join(_text(x, 0) for x in args) + "]"
    if op == "index":
        return f"{_text(args[0], 9)}[{_text(args[1], 0)}]"
    if op == "star":
        return f"{_text(args[0], 9)}[*]"
    if op == "attr":
        return f"{_text(args[0], 9)}.{a['attr']}"
    if op == "call":
        return f"{a['func']}(" + ", ".join(_text(x, 0) for x in args) + ")"
    if op == "gen":
        s = f"{_text(args[0], 0)} for {', '.join(a['vars']) if 'vars' in a else a['var']}"
        if a.get("range"):
            s += f" in {_text(a['range'], 9)}"
        if a.get("cond"):
            s += f" if {_text(a['cond'], 2)}"
        return s
    raise ValueError(f"unknown op {op!r}")
