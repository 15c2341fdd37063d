"""Programs that run another command (SPEC N2): ``env``, ``nice``, ``timeout``, ``sudo``, ``xargs``, ``sh -c``...
How many of their words are options, so that the command they run is matched, never looked for in the
wrong word: an option not known, or not literal, makes the line ask."""

from __future__ import annotations

import re
from collections.abc import Callable

from anyy.tools.shell_words import Word

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


Unwrapped = tuple[list[str], list[Word]] | str | None  # (prefix, command) | runs nothing else | unknown


def after_options(words: list[Word], with_argument: frozenset[str], long_flags: frozenset[str]) -> list[Word] | None:
    """The words after a program's options (those in ``with_argument`` take the next word); None when an
    option is not literal, or is a long one neither written ``--name=value`` nor in ``long_flags``."""
    at = 0
    while at < len(words):
        word = words[at]
        if not word.literal:
            return None
        if word.text == "--":
            return words[at + 1 :]
        if not word.text.startswith("-") or word.text == "-":
            return words[at:]
        if word.text.startswith("--") and "=" not in word.text and word.text not in long_flags:
            return None  # sudo --user root cmd: whether it takes the next word is not known here
        if word.text in with_argument:
            if at + 1 < len(words) and not words[at + 1].literal:
                return None  # sudo -u $U cmd: $U, split, could be the command
            at += 2
        else:
            at += 1
    return []


def _options(allowed: str, with_argument: str = "", long: frozenset[str] = frozenset()) -> Callable[..., Unwrapped]:
    """A wrapper taking the short options ``allowed`` (those in ``with_argument`` take a value) and the long
    ones in ``long``: ``--flag``, or ``--name=value`` when written ``--name=`` there (a value given as the
    next word is not recognised, so that the command is never looked for in the wrong place)."""

    def unwrap(words: list[Word], prefix: list[str]) -> Unwrapped:
        at = 0
        while at < len(words):
            text = words[at].text
            if not words[at].literal:
                return None  # nice -n $N cmd: $N, split, could be the command
            if text == "--":
                return prefix, words[at + 1 :]
            if text.startswith("--"):
                name, equals, _ = text.partition("=")
                if name + equals not in long:
                    return None
                at += 1
                continue
            if not text.startswith("-") or text == "-":
                break
            letters = text[1:]
            for i, letter in enumerate(letters):
                if letter not in allowed:
                    return None
                if letter in with_argument:
                    if i + 1 == len(letters):
                        if at + 1 < len(words) and not words[at + 1].literal:
                            return None
                        at += 1
                    at += 1
                    break
            else:
                at += 1
        return prefix, words[at:]

    return unwrap


def _nice(words: list[Word], prefix: list[str]) -> Unwrapped:
    if words and re.fullmatch(r"-\d+", words[0].text):
        words = words[1:]
    return _options("n", "n", frozenset({"--adjustment="}))(words, prefix)


def _timeout(words: list[Word], prefix: list[str]) -> Unwrapped:
    long = frozenset({"--signal=", "--kill-after=", "--preserve-status", "--foreground", "--verbose"})
    unwrapped = _options("svk", "sk", long)(words, prefix)
    if not isinstance(unwrapped, tuple) or not unwrapped[1] or not unwrapped[1][0].literal:
        return None
    return unwrapped[0], unwrapped[1][1:]  # the duration


def _command(words: list[Word], prefix: list[str]) -> Unwrapped:
    if any(w.text.startswith("-") and set(w.text[1:]) & {"v", "V"} for w in words[:2]):
        return "lookup"  # command -v NAME only says where NAME is
    return _options("p")(words, prefix)


def env(words: list[Word], prefix: list[str]) -> Unwrapped:
    assignments = list(prefix)
    at = 0
    while at < len(words):
        word = words[at]
        if not word.literal:
            return None
        if word.text in ("-i", "-0", "--ignore-environment", "--null", "-"):
            at += 1
        elif word.text in ("-u", "--unset") or word.text in ("-C", "--chdir"):
            if at + 1 < len(words) and not words[at + 1].literal:
                return None
            at += 2
        elif word.text.startswith(("--unset=", "--chdir=", "-u", "-C")):
            at += 1
        elif word.text == "--":
            at += 1
            break
        elif word.text.startswith("-"):
            return None  # -S splits a string into a command, and anything else we do not know
        elif _ASSIGNMENT.match(word.text):
            assignments.append(word.text)
            at += 1
        else:
            break
    return assignments, words[at:]


WRAPPERS: dict[str, Callable[[list[Word], list[str]], Unwrapped]] = {
    "env": env,
    "nice": _nice,
    "nohup": _options(""),
    "timeout": _timeout,
    "time": _options("p"),
    "command": _command,
    "builtin": _options(""),
    "exec": _options("cl", "a"),
    "stdbuf": _options("ioe", "ioe", frozenset({"--input=", "--output=", "--error="})),
    "ionice": _options("cnpt", "cnp", frozenset({"--class=", "--classdata=", "--ignore"})),
    "setsid": _options("cfw", "", frozenset({"--ctty", "--fork", "--wait"})),
    "coproc": _options(""),
}

SUDO_ARGS = frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R"})
SUDO_FLAGS = frozenset(
    {"--preserve-env", "--non-interactive", "--login", "--shell", "--reset-timestamp", "--background", "--set-home"}
)
XARGS_FLAGS = frozenset({"--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--open-tty"})
XARGS_ARGS = frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter"})
_SHELL_FLAGS = frozenset("ceuxvlr")  # -r: restricted; -l: a login shell (reads the profile, read-only in the sandbox)


def shell_script(words: list[Word]) -> Word | None:
    """The script of ``sh -c SCRIPT`` (options we know only), or None."""
    at = 0
    script_flag = False
    while at < len(words):
        word = words[at]
        if not word.literal:
            return None
        if word.text in ("-o", "+o") and at + 1 < len(words):
            if words[at + 1].text not in ("pipefail", "errexit", "nounset", "xtrace"):
                return None
            at += 2
            continue
        if word.text == "--":
            at += 1
            break
        if not word.text.startswith(("-", "+")) or len(word.text) < 2:
            break
        if not set(word.text[1:]) <= _SHELL_FLAGS:
            return None
        script_flag = script_flag or "c" in word.text
        at += 1
    if not script_flag or at >= len(words):
        return None
    return words[at]
