"""Reading and writing GPGPU-Sim / Accel-Sim option files (``gpgpusim.config``, ``trace.config``).

The simulator reads these files with its own small parser (``src/option_parser.cc``), whose
rules are not the obvious ones: a ``#`` cuts the line even inside quotes, a quoted value may span
lines, ``08`` is an error because a leading 0 means octal, ``100abc`` reads as 100, and a bool
option given no value means 1. :class:`OptionFile` follows those rules token for token, so that
what we read is what the simulator reads, and it writes files that read back the same in both.
Where the simulator would carry on with something surely wrong (an unterminated quote swallows
the rest of the file into one value) we stop with an :class:`OptionFileError` naming the file,
the line and the rule.

The file format does not know the options' types; the simulator decides from its registry
whether ``-flag -next`` gives ``-flag`` the value 1 (a bool) or the value ``-next`` (a string).
We read a name followed directly by another name, or by the end of the file, as the bare flag
(value ``1``); a name starts with ``-`` and a letter or ``_``, so ``-1`` is a value. A quoted
token is always a value (that is how :meth:`OptionFile.dumps` writes a value that looks like a
name). A nested ``-config FILE`` is kept as an ordinary option, not followed.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from gpumem_accelsim.cachestring import CacheString, CacheStringError

# C's isspace in the "C" locale; the simulator splits tokens with operator>> on these.
_WS = re.compile(r"[ \t\n\r\f\v]+")
_NAME = re.compile(r"-[A-Za-z_]")
_FULL_NAME = re.compile(r"-[A-Za-z_][^ \t\n\r\f\v#\"]*\Z")

_INT_DIGITS = {
    8: re.compile(r"[+-]?[0-7]+"),
    10: re.compile(r"[+-]?[0-9]+"),
    # in hex mode the C++ stream also takes an optional 0x of its own after the one we strip
    16: re.compile(r"[+-]?(?:0[xX](?=[0-9a-fA-F]))?[0-9a-fA-F]+"),
}
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BASE_NAMES = {8: "octal", 10: "decimal", 16: "hexadecimal"}


class OptionFileError(ValueError):
    """An option file, or one of its values, breaks a rule of the simulator's parser.

    The message starts with ``file:line:`` where known, then the rule; ``source``, ``line``
    and ``rule`` hold the parts.
    """

    def __init__(self, rule: str, source: str | None = None, line: int | None = None):
        self.rule, self.source, self.line = rule, source, line
        if source and line:
            where = f"{source}:{line}: "
        elif source:
            where = f"{source}: "
        else:
            where = ""
        super().__init__(where + rule)


def _for(option: str) -> str:
    return f" for option {option}" if option else ""


#: More digits than any 64-bit integer has: refused before ``int()`` (which raises for
#: over 4300 digits, and a 64-bit simulator field could not hold the value anyway).
MAX_DIGITS = 20


def _clip(text: str, n: int = 40) -> str:
    """A value as an error message quotes it: one line, at most ``n`` characters."""
    return repr(text if len(text) <= n else text[:n] + "...")


def _strip_base_prefix(text: str) -> tuple[str, int]:
    # option_parser.cc OptionRegistry<T>::fromString: a leading "0x" means hex, any other
    # leading "0" (in a string longer than one character) means octal.
    if len(text) > 1 and text[0] == "0":
        if len(text) > 2 and text[1] == "x":
            return text[2:], 16
        return text[1:], 8
    return text, 10


def parse_number(text: str, *, option: str = "") -> int:
    """An integer option value read as the simulator reads it.

    ``0x1f`` is hex, ``010`` is octal (8) and ``08`` is an error, ``-5`` is -5, and text after
    the number is ignored (``100abc`` is 100), all as in the simulator's C++ stream parsing.
    """
    if not isinstance(text, str):
        raise TypeError(f"option values are strings, got {type(text).__name__}")
    body, base = _strip_base_prefix(text)
    m = _INT_DIGITS[base].match(body)
    if m is None:
        if base == 8:
            why = (f"a leading 0 means octal, and {body[:1]!r} is not an octal digit"
                   if body else "no digits")
        elif base == 16:
            why = "0x must be followed by hexadecimal digits"
        else:
            why = "it does not start with a number"
        raise OptionFileError(f"cannot parse value {_clip(text)}{_for(option)} as "
                              f"{_BASE_NAMES[base]} integer: {why}")
    if len(m.group().lstrip("0")) > MAX_DIGITS:
        raise OptionFileError(f"value {_clip(text)}{_for(option)} has {len(m.group())} "
                              f"digits: more than a 64-bit integer holds")
    return builtins.int(m.group(), base)


def parse_float(text: str, *, option: str = "") -> float:
    """A floating-point option value read as the simulator reads it (trailing text ignored).

    The simulator strips a leading ``0`` or ``0x`` before reading floats too, which does not
    change ``0.5`` (read as ``.5``) but makes ``0x1.5`` read as 1.5.
    """
    if not isinstance(text, str):
        raise TypeError(f"option values are strings, got {type(text).__name__}")
    body, _ = _strip_base_prefix(text)
    m = _FLOAT.match(body)
    if m is None:
        raise OptionFileError(f"cannot parse value {_clip(text)}{_for(option)} as a number")
    return builtins.float(m.group())


def parse_bool(text: object, *, option: str = "") -> bool:
    """A bool option value: 0 or 1 only (the simulator asserts on any other number).

    As in the simulator the number is read in decimal and text after it is ignored. ``True``,
    ``False``, ``0`` and ``1`` given as Python values are accepted too.
    """
    if isinstance(text, bool):
        return text
    if isinstance(text, builtins.int):
        value = text
    elif isinstance(text, str):
        m = _INT_DIGITS[10].match(text)
        if m is None:
            raise OptionFileError(
                f"cannot parse value {_clip(text)}{_for(option)} as a bool: a bool takes 0 or "
                f"1 (the simulator would take the flag as 1 and {_clip(text)} as the next "
                f"option)")
        value = builtins.int(m.group()) if len(m.group()) <= MAX_DIGITS else 2
    else:
        raise TypeError(f"a bool option value is a string, bool or int, not "
                        f"{type(text).__name__}")
    if value not in (0, 1):
        shown = _clip(text) if isinstance(text, str) else repr(text)
        raise OptionFileError(f"value {shown}{_for(option)} is not a bool: a bool takes 0 or 1 "
                              f"(the simulator aborts on an assert)")
    return value == 1


class _Token(NamedTuple):
    text: str
    line: int
    quoted: bool


def _tokens(text: str, source: str) -> list[_Token]:
    """The token stream of option_parser.cc ParseFile + ParseStringStream, with line numbers."""
    raw: list[tuple[str, int]] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.split("#", 1)[0]  # a '#' starts a comment anywhere, even inside quotes
        raw.extend((tok, lineno) for tok in _WS.split(line) if tok)
    out: list[_Token] = []
    i = 0
    while i < len(raw):
        tok, lineno = raw[i]
        i += 1
        if not tok.startswith('"'):
            out.append(_Token(tok, lineno, False))
            continue
        if tok == '"':
            raise OptionFileError(
                "a lone '\"' opens no value: the simulator reads it as an empty quoted token "
                "and crashes (std::out_of_range); put the quote against the first word",
                source, lineno)
        words = [tok]
        while not words[-1].endswith('"'):
            if i == len(raw):
                raise OptionFileError(
                    f"unterminated quote: the value opened by {tok!r} never closes (the "
                    f"simulator would swallow the rest of the file into it); note that a '#' "
                    f"ends a line even inside quotes", source, lineno)
            words.append(raw[i][0])
            i += 1
        out.append(_Token(" ".join(words)[1:-1], lineno, True))
    return out


def _is_name(tok: _Token) -> bool:
    return not tok.quoted and _NAME.match(tok.text) is not None


def _encode(value: str) -> str:
    """``value`` as written in a file, quoted where needed; raises if it cannot read back."""
    if "#" in value:
        raise OptionFileError(f"value {value!r} cannot be written: a '#' starts a comment "
                              f"wherever it stands, even inside quotes")
    quote = (value == "" or _WS.search(value) is not None or value.startswith('"')
             or _NAME.match(value) is not None)
    text = f'"{value}"' if quote else value
    try:
        toks = _tokens(text, "")
    except OptionFileError:
        toks = []
    if len(toks) != 1 or toks[0].text != value:
        got = " ".join(repr(t.text) for t in toks) or "an error"
        raise OptionFileError(
            f"value {value!r} cannot be written so that it reads back the same (it would read "
            f"as {got}): the parser splits at whitespace, joins a quoted value's words with "
            f"single spaces and ends a quoted value at the first word ending in '\"'")
    return text


def _to_value(value: object, name: str) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (builtins.int, builtins.float)):
        return str(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"value for {name} must be a str, int, float or bool, not "
                    f"{type(value).__name__}")


class OptionFile:
    """The options of one or more option files, resolved as the simulator resolves them.

    Ordered by first appearance; a later value replaces an earlier one (as in ``-config A
    -config B``). Names keep their leading ``-``. Values are the strings the simulator sees;
    :meth:`int`, :meth:`float`, :meth:`bool` and :meth:`cache` read them by its rules.
    """

    def __init__(self, options: Mapping[str, object] | None = None):
        self._values: dict[str, str] = {}
        self._where: dict[str, tuple[str | None, int | None]] = {}
        for name, value in (options or {}).items():
            self[name] = value

    # ---- reading ------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, source: str = "<string>") -> OptionFile:
        toks = _tokens(text, source)
        of = cls()
        i = 0
        while i < len(toks):
            tok = toks[i]
            if not _is_name(tok):
                kind = "quoted value" if tok.quoted else "value"
                if i and not _is_name(toks[i - 1]):
                    before = (f"option {toks[i - 2].text} already took {toks[i - 1].text!r}; "
                              f"an option takes one value (quote a value with spaces)")
                else:
                    before = ("there is no option before it; an option name starts with '-' "
                              "and a letter or '_'")
                raise OptionFileError(f"stray {kind} {tok.text!r}: {before}", source, tok.line)
            if i + 1 < len(toks) and not _is_name(toks[i + 1]):
                value, i = toks[i + 1].text, i + 2
            else:
                value, i = "1", i + 1  # a bare bool flag
            of._values[tok.text] = value
            of._where[tok.text] = (source, tok.line)
        return of

    @classmethod
    def load(cls, path: str | Path) -> OptionFile:
        p = Path(path)
        return cls.parse(p.read_text(encoding="utf-8", errors="surrogateescape"), str(p))

    def copy(self) -> OptionFile:
        """An independent copy (values and where each came from)."""
        of = OptionFile()
        of._values = dict(self._values)
        of._where = dict(self._where)
        return of

    # ---- mapping ------------------------------------------------------------------------
    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._values.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def items(self) -> Iterator[tuple[str, str]]:
        return iter(self._values.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OptionFile):
            return NotImplemented
        return self._values == other._values

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OptionFile({len(self)} options)"

    def location(self, name: str) -> tuple[str | None, int | None]:
        """(file, line) where ``name`` got its current value; (None, None) when set in code."""
        if name not in self._values:
            raise KeyError(name)
        return self._where[name]

    def __setitem__(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not _FULL_NAME.match(name):
            raise OptionFileError(f"{name!r} is not an option name: a name starts with '-' and "
                                  f"a letter or '_' and has no whitespace, '#' or '\"'")
        text = _to_value(value, name)
        _encode(text)  # refuse now what could not be written later
        self._values[name] = text
        self._where[name] = (None, None)

    def remove(self, name: str) -> None:
        del self._values[name]
        del self._where[name]

    def update(self, other: OptionFile) -> None:
        """Apply ``other`` on top of this one: its values win, new names go at the end."""
        for name, value in other._values.items():
            self._values[name] = value
            self._where[name] = other._where[name]

    # ---- typed values -------------------------------------------------------------------
    def _raw(self, name: str, default: object) -> str | None:
        if name in self._values:
            return self._values[name]
        if default is None:
            raise KeyError(f"{name} is not set")
        return None

    def _rethrow(self, e: OptionFileError, name: str) -> OptionFileError:
        return OptionFileError(e.rule, *self._where[name])

    def int(self, name: str, default: int | None = None) -> int:
        raw = self._raw(name, default)
        if raw is None:
            return default  # type: ignore[return-value]
        try:
            return parse_number(raw, option=name)
        except OptionFileError as e:
            raise self._rethrow(e, name) from None

    def float(self, name: str, default: float | None = None) -> float:
        raw = self._raw(name, default)
        if raw is None:
            return default  # type: ignore[return-value]
        try:
            return parse_float(raw, option=name)
        except OptionFileError as e:
            raise self._rethrow(e, name) from None

    def bool(self, name: str, default: bool | None = None) -> bool:
        raw = self._raw(name, default)
        if raw is None:
            return default  # type: ignore[return-value]
        try:
            return parse_bool(raw, option=name)
        except OptionFileError as e:
            raise self._rethrow(e, name) from None

    def cache(self, name: str) -> CacheString | None:
        """The cache string ``name`` parsed; None for ``none`` (no such cache)."""
        raw = self._values[name]
        if raw == "none":
            return None
        try:
            return CacheString.parse(raw)
        except CacheStringError as e:
            source, line = self._where[name]
            where = f"{source}:{line}: " if source and line else ""
            raise CacheStringError(f"{where}{name}: {e}") from None

    # ---- writing ------------------------------------------------------------------------
    def dumps(self, comments: dict[str, str] | None = None, header: str = "") -> str:
        """The options as a file: ``-name value`` per line, values quoted where needed.

        ``header`` lines come first, each after ``# ``; ``comments[name]`` goes after that
        option's value as ``# comment`` (names not in the file are ignored).
        """
        from gpumem.api.formats import escape_controls  # text from a run: one line each

        lines = [f"# {escape_controls(h)}".rstrip() for h in header.splitlines()]
        if lines:
            lines.append("")
        comments = comments or {}
        for name, value in self._values.items():
            line = f"{name} {_encode(value)}"
            comment = comments.get(name)
            if comment:  # a device's name in it must not end the comment
                line += f"  # {escape_controls(comment)}"
            lines.append(line)
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path, **kw: object) -> None:
        """Write :meth:`dumps` (same keyword arguments) to ``path``, atomically, replacing a
        symlink there rather than writing through it (``gpumem.api.formats.write_text``)."""
        from gpumem.api.formats import write_text

        text = self.dumps(**kw)  # type: ignore[arg-type]
        write_text(path, text, errors="surrogateescape")
