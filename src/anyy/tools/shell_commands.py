"""What a shell command line runs, for the approval rules (SPEC N2): every simple command, parsed.

The line is parsed with tree-sitter's Bash grammar (the ``tree-sitter-bash`` package), never with regular
expressions. :func:`parse` returns every simple command the line can run -- in lists (``;``, ``&&``,
``||``, ``&``, new lines), pipelines, subshells, ``{ }`` groups, functions, loops and conditions, command
and process substitutions (in words, strings, here-documents and here-strings) -- as the text a rule's
pattern is matched against: its words after quote removal, joined by single spaces, prefix assignments
included (``LD_PRELOAD=x git status``). Wrappers that only change how a program runs (``env``, ``nice``,
``nohup``, ``timeout``, ``command``, ``exec``...) are removed and their command matched; programs that run
another command (``sudo``, ``xargs``, ``find -exec``) are matched themselves *and* for the command they
run; ``sh -c``/``bash -c`` and ``eval`` strings are parsed again. A redirection that writes a file is a
part of its own, ``> TARGET`` (every writing operator is written ``>``).

What cannot be known before the line runs is a *doubt*, and a doubt makes the whole line ``ask``: a parse
error, a command name that comes from an expansion (``$X foo``) or a glob, an unquoted brace expansion in
a command position, a redirection target or ``sh -c`` string that is not literal, arithmetic on a
variable (Bash evaluates a variable's text there, and ``a[$(cmd)]`` inside it runs ``cmd``), ``${!x}`` and
``${x@P}``, an option of a wrapper that is not known, and nesting deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import posixpath
import re
import threading

import msgspec
import tree_sitter
import tree_sitter_bash

from anyy.tools.shell_words import Word, value
from anyy.tools.shell_words import node_text as _text
from anyy.tools.shell_wrappers import (
    SUDO_ARGS,
    SUDO_FLAGS,
    WRAPPERS,
    XARGS_ARGS,
    XARGS_FLAGS,
    after_options,
    env,
    shell_script,
)

MAX_DEPTH = 8  # sh -c "eval 'sh -c ...'": deeper is a doubt
MAX_NESTING = 200  # syntax nested deeper ((((...)))) is a doubt, never a stack overflow
MAX_LENGTH = 64 * 1024  # characters: a longer line is asked about without being read (the decision runs on the loop)
_LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())
_LOCAL = threading.local()  # a parser is not to be shared between threads: one per thread


def _parser() -> tree_sitter.Parser:
    parser: tree_sitter.Parser | None = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = tree_sitter.Parser(_LANGUAGE)
    return parser


class ParsedLine(msgspec.Struct, frozen=True):
    commands: tuple[str, ...]  # each simple command (or "> TARGET") as matched by the rules, in order
    doubts: tuple[str, ...]  # why parts of the line cannot be decided before it runs (each makes it ask)


# Nodes that only group others: their children are visited.
_GROUPS = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "subshell",
        "redirected_statement",
        "negated_command",
        "do_group",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "case_statement",
        "case_item",
        "function_definition",
        "heredoc_redirect",
        "heredoc_body",
        "herestring_redirect",
        "test_command",
        "binary_expression",
        "unary_expression",
        "parenthesized_expression",
        "ternary_expression",
        "postfix_expression",
        "string",
        "translated_string",
        "concatenation",
        "array",
        "subscript",
        "command_substitution",
        "process_substitution",
        "brace_expression",
    }
)
# Leaves (or nodes whose content never runs anything).
_LEAVES = frozenset(
    {
        "comment",
        "word",
        "raw_string",
        "ansi_c_string",
        "string_content",
        "number",
        "variable_name",
        "special_variable_name",
        "heredoc_start",
        "heredoc_end",
        "heredoc_content",
        "file_descriptor",
        "test_operator",
        "regex",
        "extglob_pattern",
        "simple_expansion",
    }
)
_JOINED = re.compile(r"[^\s\\]\\\n[^\s]")
_SUBSCRIPT_RUN = re.compile(r"\[[^\]]*(\$|`)")
_HIDDEN = re.compile(r"(?<!\\)(`|\$\()")
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox sh"})


def parse(line: str) -> ParsedLine:
    """The simple commands ``line`` runs and the doubts that keep it from being decided."""
    walker = _Walker()
    walker.line(line, 0)
    return ParsedLine(commands=tuple(walker.commands), doubts=tuple(dict.fromkeys(walker.doubts)))


class _Walker:
    def __init__(self) -> None:
        self.commands: list[str] = []
        self.doubts: list[str] = []
        self.nesting = 0

    def doubt(self, reason: str) -> None:
        self.doubts.append(reason if len(reason) <= 200 else reason[:200] + "…")

    def line(self, source: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.doubt(f"commands nested more than {MAX_DEPTH} levels deep")
            return
        if "\x00" in source:
            self.doubt("a NUL character in the command")
            return
        if len(source) > MAX_LENGTH:
            self.doubt(f"a command line longer than {MAX_LENGTH} characters is not read")
            return
        if _JOINED.search(source):
            self.doubt("a backslash-newline inside a word (Bash joins the word; the grammar splits it)")
        try:
            encoded = source.encode("utf-8")
        except UnicodeEncodeError:
            self.doubt("characters that are not valid Unicode in the command")
            return
        tree = _parser().parse(encoded)
        self.visit(tree.root_node, depth)

    def visit(self, node: tree_sitter.Node, depth: int) -> None:
        if self.nesting >= MAX_NESTING:
            self.doubt(f"syntax nested more than {MAX_NESTING} levels deep")
            return
        self.nesting += 1
        try:
            self._visit(node, depth)
        finally:
            self.nesting -= 1

    def _visit(self, node: tree_sitter.Node, depth: int) -> None:
        if node.is_error or node.is_missing:
            self.doubt(f"the shell parser cannot read {_text(node)[:60]!r}")
            return
        if not node.is_named:
            return
        kind = node.type
        if kind == "command":
            self.command(node, depth)
        elif kind == "file_redirect":
            self.redirect(node, depth)
        elif kind == "variable_assignment":
            self.assignment(self.word(node, depth).text)
        elif kind in ("declaration_command", "unset_command"):
            # export LD_PRELOAD=... changes what the next commands run: matched as a command.
            words = [self.word(part, depth) for part in _parts(node)]
            self.commands.append(" ".join(w.text for w in words))
            self.evaluated(words)
        elif kind == "subscript":
            index = node.child_by_field_name("index")
            if index is not None and _text(index) not in ("@", "*") and _has_variable(index):
                self.doubt(
                    f"an array index computed from a variable ({_text(node)[:60]}): Bash may run commands "
                    "hidden in its value"
                )
            self.children(node, depth)
        elif kind == "for_statement":
            self.loop(node, depth)
        elif kind == "variable_assignments":
            self.children(node, depth)
        elif kind in ("arithmetic_expansion", "c_style_for_statement"):
            self.arithmetic(node, depth)
        elif kind == "compound_statement":
            if node.child_count and node.children[0].type == "((":
                self.arithmetic(node, depth)
            else:
                self.children(node, depth)
        elif kind == "expansion":
            self.expansion(node, depth)
        elif kind == "test_command":
            if _SUBSCRIPT_RUN.search(_text(node)):  # [[ -v 'a[$(cmd)]' ]] runs cmd
                self.doubt(f"a test on a variable name whose subscript runs commands ({_text(node)[:60]})")
            self.children(node, depth)
        elif kind == "heredoc_body":
            if not node.children:
                self.unread_body(node)
            self.children(node, depth)
        elif kind in _GROUPS:
            if kind == "binary_expression" and any(
                c.type == "test_operator" and _text(c) in _ARITHMETIC_TESTS for c in node.children
            ):
                self.arithmetic(node, depth)
            else:
                self.children(node, depth)
        elif kind not in _LEAVES:
            self.doubt(f"a {kind.replace('_', ' ')} the approval rules do not read")
        elif node.has_error:
            self.doubt(f"the shell parser cannot read {_text(node)[:60]!r}")
        else:
            self.unread(node)

    def unread(self, node: tree_sitter.Node) -> None:
        """A substitution the grammar left as text (it misses backquotes in here-documents) is a doubt."""
        if node.type in ("word", "string_content", "heredoc_content") and _HIDDEN.search(_text(node)):
            self.doubt(f"a command substitution the shell parser did not read in {_text(node)[:60]!r}")

    def unread_body(self, node: tree_sitter.Node) -> None:
        redirect = node.parent
        start = next((c for c in redirect.children if c.type == "heredoc_start"), None) if redirect else None
        quoted = start is not None and any(q in _text(start) for q in "'\"\\")
        if not quoted and _HIDDEN.search(_text(node)):
            self.doubt("a command substitution the shell parser did not read in a here-document")

    def children(self, node: tree_sitter.Node, depth: int) -> None:
        for child in node.children:
            self.visit(child, depth)

    def assignment(self, text: str) -> None:
        """A variable set for the rest of the line: PATH=. changes what the next commands run, so a name
        with a capital letter (or a ``*_proxy``) is matched as a command; lowercase ones are the line's own."""
        name = text.split("=", 1)[0].removesuffix("+")
        if name != name.lower() or name.endswith("_proxy"):
            self.commands.append(text)

    def evaluated(self, words: list[Word]) -> None:
        """Builtins that take variable names evaluate their array subscripts: ``a[$(cmd)]`` runs ``cmd``."""
        if any("[" in w.text and ("$" in w.text or "`" in w.text) for w in words[1:]):
            self.doubt(f"{words[0].text} with a variable name whose subscript runs commands")

    def loop(self, node: tree_sitter.Node, depth: int) -> None:
        variable = node.child_by_field_name("variable")
        self.assignment(f"{_text(variable)}=…")
        self.children(node, depth)

    def arithmetic(self, node: tree_sitter.Node, depth: int) -> None:
        if _has_variable(node):
            self.doubt(f"arithmetic on a variable ({_text(node)[:60]}): Bash may run commands hidden in its value")
        self.children(node, depth)

    def expansion(self, node: tree_sitter.Node, depth: int) -> None:
        kinds = [child.type for child in node.children]
        if "!" in kinds[:2] or ("@" in kinds and "P" in kinds):
            self.doubt(f"{_text(node)} expands a name or a prompt, which can run commands")
        self.children(node, depth)

    def word(self, node: tree_sitter.Node, depth: int) -> Word:
        """The value of one word; the commands inside it are visited."""
        self.visit_inside(node, depth)
        return value(node)

    def visit_inside(self, node: tree_sitter.Node, depth: int) -> None:
        if node.type in ("word", "raw_string", "ansi_c_string", "number", "variable_name"):
            if node.has_error:
                self.doubt(f"the shell parser cannot read {_text(node)[:60]!r}")
            self.unread(node)
            return
        if node.type == "variable_assignment":
            self.children(node, depth)
        else:
            self.visit(node, depth)

    def redirect(self, node: tree_sitter.Node, depth: int) -> None:
        operator = next((_text(c) for c in node.children if not c.is_named), "")
        targets = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
        for target in targets:
            self.visit_inside(target, depth)
        if operator not in _WRITES or not targets:
            return
        written = value(targets[0])
        if operator == ">&" and (written.text.isdigit() or written.text == "-"):
            return  # 2>&1, >&-: descriptors, not files
        if not written.literal:
            self.doubt(f"the file written by {_text(node)!r} is only known when it runs")
        elif written.text not in _HARMLESS_TARGETS:
            self.commands.append(f"> {posixpath.normpath(written.text)}")

    def command(self, node: tree_sitter.Node, depth: int) -> None:
        prefix: list[str] = []
        words: list[Word] = []
        for child in node.children:
            if child.type == "variable_assignment":
                prefix.append(self.word(child, depth).text)
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                self.visit(child, depth)
            elif child.type == "command_name":
                words.append(self.word(child.children[0], depth) if child.children else Word(text="", literal=False))
            elif child.is_named:
                words.append(self.word(child, depth))
        _Simple(self, depth).run(prefix, words)


class _Simple:
    """One simple command: its wrappers removed, the commands it runs found."""

    def __init__(self, walker: _Walker, depth: int) -> None:
        self.walker = walker
        self.depth = depth

    def add(self, prefix: list[str], words: list[Word]) -> None:
        self.walker.commands.append(" ".join([*prefix, *(w.text for w in words)]))

    def run(self, prefix: list[str], words: list[Word], fed: str = "") -> None:
        """``fed``: what the program gets from xargs or find in its arguments ("{}"...), "" if nothing."""
        if not words:
            if prefix:
                self.walker.commands.append(" ".join(prefix))
            return
        name = words[0]
        if not name.literal:
            self.walker.doubt(f"the command {name.text!r} is only known when it runs")
            self.add(prefix, words)
            return
        program = name.text
        wrapper = WRAPPERS.get(program)
        if wrapper is not None:
            inner = wrapper(words[1:], prefix)
            if inner is None:
                self.walker.doubt(f"{program} with options the approval rules do not know")
                self.add(prefix, words)
            elif isinstance(inner, str):
                self.add(prefix, words)  # a wrapper that runs nothing else (command -v git)
            else:
                self.run(inner[0], inner[1], fed)
            return
        if program in _SHELLS:
            self.shell(prefix, words, fed)
        elif program == "eval":
            if prefix:
                self.add(prefix, words)
            self.text(words[1:], fed)
        elif program in ("sudo", "doas"):
            self.add(prefix, words)
            rest = after_options(words[1:], SUDO_ARGS, SUDO_FLAGS)
            inner = env(rest, []) if rest else ([], [])
            if rest is None or not isinstance(inner, tuple):
                self.walker.doubt(f"{program} with options the approval rules do not know")
            else:
                self.run(inner[0], inner[1], fed)
        elif program in _NAME_TAKERS:
            self.add(prefix, words)
            self.walker.evaluated(words)
        elif program == "xargs":
            self.add(prefix, words)
            self.xargs(words[1:])
        elif program == "find":
            self.add(prefix, words)
            self.find(words[1:])
        else:
            self.add(prefix, words)

    def shell(self, prefix: list[str], words: list[Word], fed: str) -> None:
        script = shell_script(words[1:])
        if script is None:  # a script file, stdin or options we do not know: matched as it is
            self.add(prefix, words)
            return
        if prefix:
            self.add(prefix, words)  # BASH_ENV=x bash -c ...: the assignment matters
        if fed and fed in script.text:
            self.walker.doubt(f"{words[0].text} -c with {fed!r} in its script runs text it gets as a command")
        self.text([script], fed)

    def text(self, words: list[Word], fed: str) -> None:
        """Parse ``words`` joined (eval, sh -c) as a command line of its own."""
        if not all(w.literal for w in words):
            self.walker.doubt("a command line built when it runs (eval or sh -c of an expansion)")
            return
        self.walker.line(" ".join(w.text for w in words), self.depth + 1)

    def xargs(self, words: list[Word]) -> None:
        rest = after_options(words, XARGS_ARGS, XARGS_FLAGS)
        if rest is None:
            self.walker.doubt("xargs with options the approval rules do not know")
            return
        replace = next((w.text[2:] or "{}" for w in words if w.text.startswith(("-I", "-i", "--replace"))), "")
        if rest:
            self.run([], [*rest, Word(text="…", literal=True)], replace)

    def find(self, words: list[Word]) -> None:
        if not all(w.literal for w in words):  # find . -name $N: N="x -exec cmd ;" adds an -exec
            self.walker.doubt("find with a word known only when it runs (it could add an -exec)")
        at = 0
        while at < len(words):
            if words[at].text in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((i for i in range(at + 1, len(words)) if words[i].text in (";", "+")), len(words))
                if end == len(words):
                    self.walker.doubt("find -exec without its ending ';' or '+'")
                self.run([], words[at + 1 : end], "{}")
                at = end
            at += 1


# Builtins that take variable names, whose array subscripts Bash evaluates.
_NAME_TAKERS = frozenset({"printf", "read", "let", "mapfile", "readarray", "test", "[", "wait", "getopts"})

_DECLARATIONS = frozenset({"export", "declare", "local", "readonly", "typeset", "unset", "unsetenv"})


def _parts(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    return [child for child in node.children if child.is_named or child.type in _DECLARATIONS]


def _has_variable(node: tree_sitter.Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("variable_name", "simple_expansion", "expansion", "word", "command_substitution"):
            return True
        stack.extend(current.children)
    return False
