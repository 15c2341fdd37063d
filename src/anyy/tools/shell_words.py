"""Shell words as Bash hands them to a program (SPEC N2): quote removal, ``$'...'`` escapes, and whether a
word is literal -- known before the line runs (no expansion, substitution, glob, brace or tilde)."""

from __future__ import annotations

import re

import msgspec
import tree_sitter

_GLOB = re.compile(r"[*?\[]")
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_ANSI_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL)


class Word(msgspec.Struct, frozen=True):
    text: str  # the value after quote removal; the source text when not literal
    literal: bool  # no expansion, substitution, glob, brace or tilde: the text is what the program gets


def node_text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def value(node: tree_sitter.Node) -> Word:
    """A word's value after quote removal, and whether it is literal."""
    kind = node.type
    if kind == "word":
        return _unquoted(node_text(node))
    if kind == "number":
        return Word(text=node_text(node), literal=True)
    if kind == "raw_string":
        return Word(text=node_text(node)[1:-1], literal=True)
    if kind == "ansi_c_string":
        return _ansi_c(node_text(node)[2:-1])
    if kind == "string":
        return _double_quoted(node)
    if kind == "concatenation":
        values = [value(child) for child in node.children]
        unquoted = "".join(node_text(child) for child in node.children if child.type == "word")
        literal = all(v.literal for v in values) and not _BRACES.search(unquoted)
        return Word(text="".join(v.text for v in values), literal=literal)
    if kind == "variable_assignment":
        parts = [c for c in node.children if c.type not in ("variable_name", "=", "+=")]
        name = node_text(node.child_by_field_name("name")) or node_text(node.children[0])
        operator = "+=" if any(c.type == "+=" for c in node.children) else "="
        assigned = value(parts[0]) if parts else Word(text="", literal=True)
        return Word(text=f"{name}{operator}{assigned.text}", literal=assigned.literal)
    return Word(text=node_text(node), literal=False)


def _unquoted(text: str) -> Word:
    literal = not text.startswith("~")
    if "\\" not in text:  # the common case: nothing escaped
        literal = literal and not (_GLOB.search(text) or _BRACES.search(text) or "$" in text or "`" in text)
        return Word(text=text, literal=literal)
    out: list[str] = []
    at = 0
    plain: list[str] = []  # the unquoted characters, for globs and braces
    while at < len(text):
        char = text[at]
        if char == "\\" and at + 1 < len(text):
            if text[at + 1] != "\n":
                out.append(text[at + 1])
            at += 2
            continue
        out.append(char)
        plain.append(char)
        at += 1
    unquoted = "".join(plain)
    if _GLOB.search(unquoted) or _BRACES.search(unquoted) or "$" in unquoted or "`" in unquoted:
        literal = False
    return Word(text="".join(out), literal=literal)


def _double_quoted(node: tree_sitter.Node) -> Word:
    out: list[str] = []
    literal = True
    for child in node.children:
        if child.type == '"' or (not child.is_named and node_text(child) in ('"', '$"')):
            continue
        if child.type == "string_content":
            out.append(re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), node_text(child)))
        else:
            out.append(node_text(child))
            literal = False
    return Word(text="".join(out), literal=literal)


def _ansi_c(body: str) -> Word:
    def escape(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xuU":
            return chr(int(code[1:], 16)) if int(code[1:], 16) < 0x110000 else "\ufffd"
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        if code[0] == "c" and len(code) == 2:
            return chr(ord(code[1].upper()) ^ 0x40)
        return _ANSI_ESCAPES.get(code, "\\" + code)

    text = _ANSI.sub(escape, body)
    return Word(text=text, literal="\x00" not in text)
