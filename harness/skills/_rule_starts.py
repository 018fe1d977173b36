"""Where a scan rule's matches can start, read off its parsed pattern, so the scanner tries a rule
only at those places instead of at every character of a text.

A rule's pattern is split into its top-level alternatives; each alternative promises either

- :class:`LineStart`: it starts at a line start (``(?<![^\\n])``, how the rules spell "once per
  line") and the part of it that cannot leave that line contains one of each set of needles; or
- :class:`LiteralStart`: every match of it begins with one of a few literal strings.

A rule whose every alternative promises one of these gets a :data:`Starts`; the scanner then runs
``regex.match`` at each candidate position in order, skipping positions inside the last match,
which finds exactly the matches ``finditer`` would find (no match can start anywhere else). Any
construct this module does not understand makes the promise ``None``: the rule runs everywhere.
Strings are lower case; the scanner looks for them in the lower-cased text, which holds every
case-insensitive occurrence.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "EDGE",
    "LineStart",
    "LiteralStart",
    "Probe",
    "Promise",
    "Starts",
    "WordBefore",
    "best",
    "plain",
    "required_sets",
    "starts",
]

# The standard library's regular-expression parser and its opcodes (no typed public names).
_parser: Any = importlib.import_module("re._parser")
_compiler: Any = importlib.import_module("re._compiler")
_c: Any = importlib.import_module("re._constants")
_NEWLINE = 10
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT)
# Character categories that hold a newline (unknown ones are assumed to).
_NO_NEWLINE = {_c.CATEGORY_NOT_SPACE, _c.CATEGORY_DIGIT, _c.CATEGORY_WORD, _c.CATEGORY_NOT_LINEBREAK}
_MAX_RANGE = 64  # a wider character range is no useful start
_MAX_STRINGS = 64  # more alternative starts than this are no useful start either
_MAX_CHARS = 4  # nor more single characters (a match may start at any letter)

# Below this many characters finding the candidates costs more than trying every position.
_SMALL = 1024
# ASCII word characters as themselves, every other byte (UTF-8 sequences too) as a space.
_WORD_BYTES = bytes(b if chr(b).isascii() and (chr(b).isalnum() or chr(b) == "_") else 32 for b in range(256))

Item = tuple[Any, Any]


@dataclass(frozen=True, slots=True)
class LineStart:
    """Matches start at a line start whose line holds one needle of each set (no sets: any line)."""

    needles: tuple[frozenset[str], ...]
    anywhere: tuple[frozenset[str], ...] = ()
    """One string of each set is somewhere in every text the alternative matches."""
    regex: re.Pattern[str] | None = field(default=None, compare=False)
    """This alternative alone (``None``: the rule's whole pattern)."""


@dataclass(frozen=True, slots=True)
class LiteralStart:
    """Matches start with one of ``prefixes``."""

    prefixes: frozenset[str]
    anywhere: tuple[frozenset[str], ...] = ()
    regex: re.Pattern[str] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class WordBefore:
    """Matches start at the first character of a word that ``char`` follows (``\\bname=``)."""

    char: str
    anywhere: tuple[frozenset[str], ...] = ()
    regex: re.Pattern[str] | None = field(default=None, compare=False)


Promise = LineStart | LiteralStart | WordBefore
Needles = frozenset[str] | tuple[str, ...]
"""Strings one of which a text must hold (a rule's needles, a set an alternative needs)."""
Starts = tuple[Promise, ...]


def starts(pattern: str, flags: int = 0) -> Starts | None:
    """Where matches of ``pattern`` (compiled with ``flags``) can start, or ``None`` when that
    cannot be told from the pattern."""
    try:
        parsed = _parser.parse(pattern, flags)
    except re.error:
        return None
    if parsed.getwidth()[0] == 0:
        return None  # an empty match: where ``finditer`` looks next is subtle, so look everywhere
    dotall = bool(parsed.state.flags & re.DOTALL)
    items: list[Item] = list(parsed)
    # ``\bA|\bB`` parses as ``\b(?:A|B)``: zero-width items before a last alternation
    # choose nothing, so each alternative is that prefix and its own items.
    prefix = 0
    while prefix < len(items) and items[prefix][0] in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        prefix += 1
    if prefix == len(items) - 1 and items[-1][0] is _c.BRANCH:
        branches = [[*items[:prefix], *b] for b in items[-1][1][1]]
    else:
        branches = [items]
    found: list[tuple[Promise, list[Item]]] = []
    for branch in branches:
        promise = _branch_starts(branch, dotall)
        if promise is None:
            return None
        found.extend(promise)
    if len(found) == 1:
        return (found[0][0],)
    # Each alternative compiled alone (same groups, same flags): at a position only the
    # alternatives that can start there are tried, in the pattern's order, which is what the
    # whole pattern does there (the first alternative that matches wins).
    return tuple(
        replace(p, regex=_compiler.compile(_parser.SubPattern(parsed.state, items), flags)) for p, items in found
    )


def _branch_starts(seq: list[Item], dotall: bool) -> list[tuple[Promise, list[Item]]] | None:
    """The promises of one alternative, each with the items it stands for."""
    if seq and _is_line_anchor(seq[0]):
        rest = seq[1:]
        if rest and rest[0][0] is _c.BRANCH:  # ``(?<![^\n])(?:A|B)C``: one promise per alternative
            promises: list[tuple[Promise, list[Item]]] = []
            for branch in rest[0][1][1]:
                promise = _branch_starts([seq[0], *branch, *rest[1:]], dotall)
                if promise is None:
                    return None
                promises.extend(promise)
            return promises
        return [(LineStart(tuple(_in_first_line(rest, dotall)), _selective_first(required_sets(seq))), seq)]
    first = _first_strings(seq)
    if first is not None:
        return [(LiteralStart(first, _selective_first(required_sets(seq))), seq)]
    word = _word_before(seq)
    return None if word is None else [(WordBefore(word, _selective_first(required_sets(seq))), seq)]


def _word_before(seq: Sequence[Item]) -> str | None:
    """``c`` when ``seq`` is ``\\b``, a word character, more (``\\w*``), then the literal ``c``
    (not a word character), groups aside: each match starts where a word run before ``c`` does."""
    items = list(seq)
    if not items or items[0] != (_c.AT, _c.AT_BOUNDARY):
        return None
    items = items[1:]
    while items and items[0][0] is _c.SUBPATTERN:
        items = [*items[0][1][-1], *items[1:]]
    if len(items) < 3:
        return None
    (op, members), (repeat, (low, _, body)), (last, char) = items[:3]
    word_class = op is _c.IN and all(
        (kind is _c.LITERAL and (chr(arg).isalnum() or chr(arg) == "_"))
        or (kind is _c.RANGE and all(chr(c).isalnum() for c in range(arg[0], arg[1] + 1)))
        or (kind is _c.CATEGORY and arg is _c.CATEGORY_WORD)
        for kind, arg in members
    )
    words = repeat in _REPEATS and low == 0 and list(body) == [(_c.IN, [(_c.CATEGORY, _c.CATEGORY_WORD)])]
    if not (word_class and words and last is _c.LITERAL):
        return None
    text = chr(char)
    return None if text.isalnum() or text == "_" or text == "\n" else text


def _in_first_line(seq: Sequence[Item], dotall: bool) -> list[frozenset[str]]:
    """What ``seq`` requires before it can first match a newline: its leading items that never
    do, then the same inside the first item that can (a group, a repeat, each alternative)."""
    prefix: list[Item] = []
    for op, arg in seq:
        if _line_local((op, arg), dotall):
            prefix.append((op, arg))
            continue
        found = required_sets(prefix, right=_starts_word((op, arg)))
        if op is _c.SUBPATTERN:
            _, add, remove, body = arg
            found += _in_first_line(list(body), (dotall or bool(add & re.DOTALL)) and not remove & re.DOTALL)
        elif op is _c.ATOMIC_GROUP:
            found += _in_first_line(list(arg), dotall)
        elif op in _REPEATS and arg[0] >= 1:
            found += _in_first_line(list(arg[2]), dotall)
        elif op is _c.BRANCH:
            branches = [best(_in_first_line(list(branch), dotall)) for branch in arg[1]]
            if all(branches):
                found.append(frozenset().union(*(b for b in branches if b)))
        return found
    return required_sets(prefix)


def _is_line_anchor(item: Item) -> bool:
    op, arg = item
    if op is not _c.ASSERT_NOT or arg[0] != -1:
        return False
    body = list(arg[1])
    return len(body) == 1 and body[0] == (_c.NOT_LITERAL, _NEWLINE)


def _first_strings(seq: Sequence[Item]) -> frozenset[str] | None:
    """Strings one of which begins every match of ``seq`` (``None``: unknown, or it may be empty)."""
    for index, (op, arg) in enumerate(seq):
        rest = seq[index + 1 :]
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue  # zero-width: the match starts after it
        if op is _c.LITERAL:
            run = []
            for next_op, next_arg in seq[index:]:
                if next_op is not _c.LITERAL or next_arg >= 128:
                    break
                run.append(chr(next_arg).lower())
            if not run:
                return None
            head = "".join(run)
            after = seq[index + len(run) :]
            # ``r(?:mtree|m_rf)``, as the parser factors ``rmtree|rm_rf``: the longer starts
            tails = _first_strings(after) if after and after[0][0] in (_c.BRANCH, _c.SUBPATTERN) else None
            return frozenset(head + tail for tail in tails) if tails else frozenset({head})
        if op is _c.IN:
            return _union([_class_chars(arg)])
        if op is _c.SUBPATTERN:
            return _first_strings([*arg[-1], *rest])
        if op is _c.ATOMIC_GROUP:
            return _first_strings([*arg, *rest])
        if op is _c.BRANCH:
            return _union([_first_strings([*branch, *rest]) for branch in arg[1]])
        if op in _REPEATS:
            low, _, body = arg
            with_body = _first_strings([*body, *rest])
            return with_body if low >= 1 else _union([with_body, _first_strings(rest)])
        return None
    return None


def _union(sets: list[frozenset[str] | None]) -> frozenset[str] | None:
    if any(s is None for s in sets):
        return None
    union = frozenset().union(*(s for s in sets if s is not None))
    return union if len(union) <= _MAX_STRINGS and sum(len(s) == 1 for s in union) <= _MAX_CHARS else None


def _class_chars(members: list[Item]) -> frozenset[str] | None:
    chars: set[str] = set()
    for op, arg in members:
        if op is _c.LITERAL and arg < 128:
            chars.add(chr(arg).lower())
        elif op is _c.RANGE and arg[1] < 128 and arg[1] - arg[0] < _MAX_RANGE:
            chars.update(chr(c).lower() for c in range(arg[0], arg[1] + 1))
        else:
            return None
    return frozenset(chars) or None


def _line_local(item: Item, dotall: bool) -> bool:
    """Whether ``item`` can never match (or look at, in a lookaround) a newline."""
    op, arg = item
    if op is _c.LITERAL:
        return bool(arg != _NEWLINE)
    if op is _c.NOT_LITERAL:
        return bool(arg == _NEWLINE)
    if op is _c.ANY:
        return not dotall
    if op is _c.IN:
        return not _class_has_newline(arg)
    if op is _c.AT:
        return True
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return all(_line_local(i, dotall) for i in arg[1])
    if op is _c.SUBPATTERN:
        _, add, remove, body = arg
        inner = (dotall or bool(add & re.DOTALL)) and not remove & re.DOTALL
        return all(_line_local(i, inner) for i in body)
    if op is _c.ATOMIC_GROUP:
        return all(_line_local(i, dotall) for i in arg)
    if op is _c.BRANCH:
        return all(_line_local(i, dotall) for branch in arg[1] for i in branch)
    if op in _REPEATS:
        return all(_line_local(i, dotall) for i in arg[2])
    return False


def _class_has_newline(members: list[Item]) -> bool:
    negate = bool(members) and members[0][0] is _c.NEGATE
    holds = False
    for op, arg in members[1:] if negate else members:
        if op is _c.LITERAL:
            holds = holds or arg == _NEWLINE
        elif op is _c.RANGE:
            holds = holds or arg[0] <= _NEWLINE <= arg[1]
        elif op is _c.CATEGORY:
            holds = holds or arg not in _NO_NEWLINE
        else:
            return True  # not understood: assume it can
    return holds != negate


def required_sets(items: Sequence[Item], left: bool = False, right: bool = False) -> list[frozenset[str]]:
    """Sets of lower-case strings such that every match of ``items`` holds one string of each:
    runs of literals, and what groups, repeats of at least one, lookaheads and alternations (each
    branch promising one) require.

    A string's end that the pattern puts at a word's edge (``\\bcurl\\b``, ``rm\\s``, after
    ``(?<![\\w.-])``) is marked with :data:`EDGE`: the text holds it as a whole word, or as a
    word's start or end (see :func:`plain`). ``left`` and ``right`` say whether what comes
    before and after ``items`` puts such an edge there."""
    found: list[frozenset[str]] = []
    run: list[str] = []
    run_left = left

    def flush(edge: bool) -> None:
        if run:
            found.append(frozenset({_edged("".join(run), run_left, edge)}))
            run.clear()

    before, before_left = "", False  # the run of literals right before the current item
    last = len(items) - 1
    for index, (op, arg) in enumerate(items):
        edge_before = _ends_word(items[index - 1]) if index else left
        edge_after = _starts_word(items[index + 1]) if index < last else right
        if op is _c.LITERAL and arg < 128:
            if not run:
                run_left = edge_before
            run.append(chr(arg).lower())
            continue
        before, before_left = "".join(run), run_left
        flush(_starts_word((op, arg)))
        if op is _c.SUBPATTERN:
            found.extend(required_sets(list(arg[-1]), edge_before, edge_after))
        elif op is _c.ATOMIC_GROUP:
            found.extend(required_sets(list(arg), edge_before, edge_after))
        elif op in _REPEATS and arg[0] >= 1:  # the first repetition: what follows it may be another
            found.extend(required_sets(list(arg[2]), edge_before, edge_after and arg[1] == 1))
        elif op is _c.ASSERT and arg[0] == 1:  # a lookahead: the text holds it too
            found.extend(required_sets(list(arg[1]), edge_before))
        elif op is _c.BRANCH:
            branches = [best(required_sets(list(branch), edge_before, edge_after)) for branch in arg[1]]
            if all(branches):
                found.append(frozenset().union(*(b for b in branches if b)))
            if before:  # ``n(?:c|cat)``, as the parser factors ``nc|ncat``: the whole words too
                heads = _union([_first_strings(list(branch)) for branch in arg[1]])
                whole = all(all(o is _c.LITERAL and a < 128 for o, a in branch) for branch in arg[1])
                if heads:
                    found.append(frozenset(_edged(before + head, before_left, whole and edge_after) for head in heads))
        before = ""
    flush(right)
    return found


EDGE = "\x00"
"""Marks a needle's end that lies at a word's edge: no ASCII letter, digit or underscore is next
to it there in the lower-cased text (see :func:`required_sets`)."""


def plain(needle: str) -> str:
    """``needle`` without its :data:`EDGE` marks: the text holds this string."""
    return needle.replace(EDGE, "")


def _edged(text: str, left: bool, right: bool) -> str:
    """``text`` marked at each end that ``left``/``right`` put at a word's edge, where its own
    character there is a word character (only then is the edge outside it)."""
    if left and _is_word(text[0]):
        text = EDGE + text
    if right and _is_word(text[-1]):
        text += EDGE
    return text


def _is_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _ends_word(item: Item) -> bool:
    """Whether the character before what follows ``item`` is never a word character (or there
    is none): a word boundary, a lookbehind refusing word characters, a line start, a class
    of non-word characters (or a repeat of one, at least once)."""
    op, arg = item
    if op is _c.ASSERT_NOT and arg[0] == -1:
        body = list(arg[1])
        return len(body) == 1 and (body[0] == (_c.NOT_LITERAL, _NEWLINE) or _has_word_class(body[0]))
    return _word_boundary_or_wordless(item)


def _starts_word(item: Item) -> bool:
    """Whether the character after what precedes ``item`` is never a word character (or there
    is none): :func:`_ends_word`'s mirror."""
    op, arg = item
    if op is _c.ASSERT_NOT and arg[0] == 1:
        body = list(arg[1])
        return len(body) == 1 and _has_word_class(body[0])
    return _word_boundary_or_wordless(item)


def _word_boundary_or_wordless(item: Item) -> bool:
    op, arg = item
    if op is _c.AT:
        return bool(arg is _c.AT_BOUNDARY)
    if op in _REPEATS and arg[0] >= 1:
        body = list(arg[2])
        return len(body) == 1 and _wordless(body[0])
    return _wordless(item)


def _wordless(item: Item) -> bool:
    """Whether ``item`` is a class that holds no word character (``\\s``, ``[;&|]``)."""
    op, arg = item
    if op is not _c.IN:
        return False
    return all(
        (kind is _c.LITERAL and not chr(value).isalnum() and chr(value) != "_")
        or (kind is _c.CATEGORY and value in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_WORD))
        for kind, value in arg
    )


def _has_word_class(item: Item) -> bool:
    """Whether ``item`` is a class holding every word character (``[\\w.-]``)."""
    op, arg = item
    if op is not _c.IN:
        return False
    members = list(arg)
    return (_c.CATEGORY, _c.CATEGORY_WORD) in members and (_c.NEGATE, None) not in members


def best(sets: list[frozenset[str]]) -> frozenset[str] | None:
    """The most selective of ``sets``: the longest shortest string, then the fewest strings."""
    return max(sets, key=lambda s: (min(map(len, s)), -len(s))) if sets else None


@functools.lru_cache(maxsize=4096)
def _key(needle: str) -> tuple[bytes, bool, bool] | None:
    """What to look for in a text's vocabulary (its words, each between two spaces) for
    ``needle``: its longest run of ASCII word characters, with a space at each end that lies at
    a word's edge (an :data:`EDGE` mark, or another character of the needle); whether that
    answers for the whole needle; and whether it is one whole word (then it is looked up in the
    set of words). ``None``: the needle holds no word character."""
    runs = list(re.finditer(r"[a-z0-9_]+", needle, re.ASCII | re.IGNORECASE))
    if not runs:
        return None
    run = max(runs, key=lambda m: len(m.group()))
    start, end = run.span()
    key = (" " if start > 0 else "") + run.group().lower() + (" " if end < len(needle) else "")
    whole = len(plain(needle)) == end - start
    return key.encode("ascii"), whole, whole and needle == EDGE + run.group() + EDGE


@functools.lru_cache(maxsize=1024)
def _split(needles: Needles) -> tuple[frozenset[bytes], tuple[str, ...]]:
    """``needles`` as the whole words among them (bytes, unmarked) and the others."""
    words = frozenset(key[0][1:-1] for key in map(_key, needles) if key is not None and key[2])
    others = tuple(n for n in needles if (key := _key(n)) is None or not key[2])
    return words, others


def _selective_first(sets: list[frozenset[str]]) -> tuple[frozenset[str], ...]:
    """``sets`` with the likeliest to be missing from a text first (whole words, long strings;
    a lone ``|`` or ``-`` last): a text that lacks one is then turned down after fewer lookups."""

    def rarity(needle: str) -> int:
        return len(needle) + 3 * needle.count(EDGE)

    return tuple(sorted(sets, key=lambda s: (-min(map(rarity, s)), len(s))))


class Probe:
    """One view's text joined by newlines, its lower-cased copy, and where needles and prefixes
    occur in it (each looked up once per view, whichever rules ask)."""

    def __init__(
        self, view: Sequence[tuple[int, str]], fold: Mapping[int, str], *, words: set[bytes] | None = None
    ) -> None:
        """``words``: the text's words when the caller has them already (see :meth:`words`)."""
        self.text = "\n".join([segment for _, segment in view])
        # ``fold``: the characters that match an ASCII letter case-insensitively, as that letter.
        self.lower = self.text.translate(fold).lower()
        # Positions in ``lower`` are positions in ``text`` when lower-casing kept every length.
        self.aligned = len(self.lower) == len(self.text)
        self._view = view
        self._lines: dict[str, frozenset[int]] = {}
        self._at: dict[str, list[int]] = {}
        self._has: dict[str, bool] = {}
        self._words = words
        self._vocabulary = b""

    def has_any(self, needles: Needles) -> bool:
        """Whether one of ``needles`` is in the text (see :meth:`has`): the whole words among
        them are looked up together, as one intersection with the text's words."""
        words, others = _split(needles)
        return bool(words and words & self.words()) or any(map(self.has, others))

    def words(self) -> set[bytes]:
        """The text's words: its runs of ASCII letters, digits and underscores, lower-cased."""
        if self._words is None:
            self._words = set(self.lower.encode("utf-8", "surrogatepass").translate(_WORD_BYTES).split())
        return self._words

    def has(self, needle: str) -> bool:
        """Whether ``needle`` occurs in the lower-cased text, as a word's start or end where it
        is marked with :data:`EDGE` (asked once per view, whichever rules share the needle)."""
        found = self._has.get(needle)
        if found is None:
            found = self._has[needle] = self._holds(needle)
        return found

    def _holds(self, needle: str) -> bool:
        """:meth:`has`, answered from the text's vocabulary where it can be: every occurrence of
        a run of word characters lies inside one word of the text, so a needle whose longest run
        is in no word is not in the text, and a needle that is such a run is in the text exactly
        when it is in a word (a whole word: exactly when it is one of the words). The words of a
        text are a fraction of its length (prose repeats them), so most needles, which are
        absent, cost little."""
        key = _key(needle)
        if key is None:
            return plain(needle) in self.lower
        text, whole, word = key
        if word:
            return text[1:-1] in self.words()
        if not self._vocabulary:
            self._vocabulary = b" %s " % b" ".join(self.words())
        if text not in self._vocabulary:
            return False
        return whole or plain(needle) in self.lower

    @functools.cached_property
    def starts(self) -> list[int]:
        """Where each line of the view starts in :attr:`text` (worked out only when a rule
        has somewhere to look: most texts turn every rule down first)."""
        return [0, *itertools.accumulate([len(segment) + 1 for _, segment in self._view[:-1]])]

    def line_of(self, offset: int) -> int:
        """The index of the line ``offset`` falls in."""
        return max(bisect.bisect_right(self.starts, offset) - 1, 0)

    def matches(self, regex: re.Pattern[str], where: Starts | None) -> Iterator[re.Match[str]]:
        """What ``regex.finditer(self.text)`` yields, trying only ``where`` a match can start."""
        if where is None or not self.aligned or len(self.text) < _SMALL:
            yield from regex.finditer(self.text)
            return
        end = 0
        candidates = self._candidates(where)
        for position in sorted(candidates):
            if position < end:
                continue  # inside the last match, where ``finditer`` does not look either
            for index in sorted(candidates[position]):
                match = (where[index].regex or regex).match(self.text, position)
                if match is not None:
                    yield match  # never empty: a pattern that can match nothing has no starts
                    end = match.end()
                    break

    def _candidates(self, starts: Starts) -> dict[int, set[int]]:
        """Each position where a match can start, with the alternatives that can start there."""
        found: dict[int, set[int]] = {}
        for index, promise in enumerate(starts):
            if not all(map(self.has_any, promise.anywhere)):
                continue  # the text lacks something every match of this alternative holds
            for position in self._promised(promise):
                found.setdefault(position, set()).add(index)
        return found

    def _promised(self, promise: Promise) -> set[int]:
        """Where ``promise`` says its alternative can start."""
        if isinstance(promise, LiteralStart):
            return {at for prefix in promise.prefixes for at in self._occurrences(prefix)}
        if isinstance(promise, WordBefore):
            return set(self._words_before(promise.char))
        if not promise.needles:
            return set(self.starts)
        # The lines holding the rarest-looking needles, then each other set checked there; only
        # the needles the text holds at all are looked for line by line.
        first, *others = (
            [n for n in needles if self.has(n)]
            for needles in sorted(promise.needles, key=lambda s: (-min(map(len, s)), len(s)))
        )
        positions = set()
        for line in frozenset().union(*(self._lines_with(n) for n in first)):
            text = self._line(line)
            if all(any(plain(n) in text for n in needles) for needles in others):
                positions.add(self.starts[line])
        return positions

    def _words_before(self, char: str) -> list[int]:
        """Where each run of word characters right before an occurrence of ``char`` starts."""
        text = self.text
        found = []
        for at in self._occurrences(char):
            start = at
            while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                start -= 1
            if start < at:
                found.append(start)
        return found

    def _occurrences(self, needle: str) -> list[int]:
        found = self._at.get(needle)
        if found is None:
            found = []
            index = self.lower.find(needle)
            while index >= 0:
                found.append(index)
                index = self.lower.find(needle, index + 1)
            self._at[needle] = found
        return found

    def _line(self, index: int) -> str:
        end = self.starts[index + 1] - 1 if index + 1 < len(self.starts) else len(self.lower)
        return self.lower[self.starts[index] : end]

    def _lines_with(self, needle: str) -> frozenset[int]:
        lines = self._lines.get(needle)
        if lines is None:
            found = []
            text, lower = plain(needle), self.lower
            left, right = needle.startswith(EDGE), needle.endswith(EDGE)
            at = lower.find(text)
            while at >= 0:
                end = at + len(text)
                if (left and at > 0 and _is_word(lower[at - 1])) or (
                    right and end < len(lower) and _is_word(lower[end])
                ):
                    at = lower.find(text, at + 1)  # inside a word: not where the pattern has it
                    continue
                line = self.line_of(at)
                found.append(line)
                # A needle never holds a newline: the rest of its line need not be searched.
                at = lower.find(text, self.starts[line + 1]) if line + 1 < len(self.starts) else -1
            lines = self._lines[needle] = frozenset(found)
        return lines
