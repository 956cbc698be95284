"""The short forms code writes for the words a person asks in: "WebSocket client" is ``client_ws.py``, "database
routing" ``db/utils.py``, "deserialization" serde's ``de/``.

A question says the word whole and a file or folder is named by its short form, which neither a stem nor a common
start finds (``ws`` is no start of "websocket"). So the ranking lets a word of the query name a file or folder by
one of these forms as well as by itself, and only where the form, or its plural, is a whole part of the name
(``client_ws``: client, ws; ``de/impls.rs`` for "implementations"): as a prefix, ``str`` would name
``strategy.go`` and ``req`` ``require.js``.

The table is the common vocabulary of short names in code, written down once, not tuned on any bench; a word is
looked up as asked and by its stem ("arguments", "configured"). It leaves out the folders that hold a project's
code (``src``, ``lib``, ``pkg``): "source" or "library" in a question is seldom that folder, and would lift every
file directly in it.
"""

from __future__ import annotations

import functools
import re

from onetool_code.names import stem

_TABLE = {
    "address": "addr", "allocate": "alloc", "allocation": "alloc", "allocator": "alloc", "application": "app",
    "argument": "arg args", "asynchronous": "async", "attribute": "attr", "authentication": "auth",
    "authorization": "auth", "boolean": "bool", "buffer": "buf", "callback": "cb", "certificate": "cert",
    "character": "char", "command": "cmd", "compare": "cmp", "comparison": "cmp", "configuration": "config cfg conf",
    "configure": "config cfg conf", "context": "ctx", "control": "ctrl", "current": "cur", "database": "db",
    "declaration": "decl", "definition": "def", "deserialization": "de", "deserialize": "de", "deserializer": "de",
    "destination": "dst dest", "dictionary": "dict", "directory": "dir", "document": "doc",
    "documentation": "doc docs", "element": "elem", "environment": "env", "error": "err", "event": "evt",
    "execute": "exec", "execution": "exec", "expression": "expr", "format": "fmt", "formatting": "fmt",
    "function": "fn func", "generate": "gen", "generator": "gen", "image": "img", "implementation": "impl",
    "index": "idx", "information": "info", "initialization": "init", "initialize": "init", "instance": "inst",
    "integer": "int", "iteration": "iter", "iterator": "iter", "length": "len", "manager": "mgr",
    "maximum": "max", "message": "msg", "middleware": "mw", "minimum": "min", "miscellaneous": "misc",
    "number": "num", "object": "obj", "option": "opt opts", "parameter": "param params",
    "password": "pwd passwd", "pointer": "ptr", "position": "pos", "previous": "prev", "process": "proc",
    "property": "prop props", "receive": "recv", "reference": "ref", "repository": "repo", "request": "req",
    "response": "resp res", "sequence": "seq", "serialization": "ser", "serialize": "ser", "serializer": "ser",
    "service": "svc", "socket": "sock", "specification": "spec", "standard": "std",
    "statistics": "stats", "string": "str", "synchronize": "sync", "synchronous": "sync", "temporary": "tmp temp",
    "template": "tmpl tpl", "transaction": "tx", "utility": "util utils", "value": "val", "variable": "var",
    "websocket": "ws",
}  # fmt: skip


@functools.cache
def _forms() -> dict[str, frozenset[str]]:
    """Each word of the table, and its stem, to its short forms and their plurals (stemming waits for the first
    search)."""
    forms: dict[str, set[str]] = {}
    for word, short in _TABLE.items():
        for key in (word, stem(word)):
            forms.setdefault(key, set()).update(f for form in short.split() for f in (form, form + "s"))
    return {key: frozenset(value) for key, value in forms.items()}


def short_forms(word: str) -> frozenset[str]:
    """The short forms of a lowercase word of a query, by the word itself or its stem; none for most words."""
    forms = _forms()
    return forms.get(word, frozenset()) | forms.get(stem(word), frozenset())


# A word of capitalised words run together, standing whole: "HuggingFace", "JavaScript"; not ``getJavaScript``.
_CAMEL = re.compile(r"(?<![A-Za-z0-9_])(?:[A-Z][a-z]+){2,}(?![A-Za-z0-9_])")


def initials(query: str) -> frozenset[tuple[str, str]]:
    """Each word of the query written as capitalised words run together, lowercased, with the initials of its
    words: the short form code gives such a name, which no table lists every one of (``hf.py`` for
    "HuggingFace", ``JSValue`` for "JavaScript")."""
    return frozenset((word.lower(), "".join(re.findall("[A-Z]", word)).lower()) for word in _CAMEL.findall(query))
