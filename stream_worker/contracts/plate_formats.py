"""The plate formats book: which plates each country issues, and which recognizer reads them.

The book is data (`plate_formats.toml` beside this module, or an operator's own file through
`load_book(path)`): a row per country with its recognizer(s) and its patterns, each with the source
that documents it. A camera names a *region* (`region(code)`): a country code, `eu` (the European
countries of the book that the Latin recognizer reads) or `auto` (every format, both recognizers).
`plates.reading` reads a recognizer's probabilities through a region's formats.

The pattern language, written for people and compiled into per-position character classes:

    A        a letter (the country's `letters`, A-Z unless the row narrows them)
    0        a digit
    *        a letter or a digit
    [...]    one of the characters listed; `X-Y` is a range: [A-HJ-NP-Z]
    {n}      the element before it n times; {m,n}: m to n times
    space - .  separators as printed on the plate, ignored when reading (the text has none)

A pattern is checked on load (`FormatsError` names the country, the pattern and the reason): only
these symbols, every character in the alphabet of each recognizer the country names, and at most
`RECOGNIZER_MAX_LENGTH` characters. It sits in `contracts` (the bottom layer) so that the camera
settings contract can validate a region; it imports nothing from stream_worker.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import string
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

BOOK_PATH = Path(__file__).with_name("plate_formats.toml")
DEFAULT_REGION = "ru"  # a camera without a region reads Russian plates, LPRNet only
AUTO_REGION = "auto"  # every format of the book, every recognizer

LPRNET = "lprnet"
GLOBAL = "global"
# What each recognizer can write (its output classes without the CTC blank / the pad), and how many
# characters at most: the CCT has 9 slots; LPRNet's 18 CTC steps fit 9 characters with blanks between.
RECOGNIZER_ALPHABETS: dict[str, str] = {
    LPRNET: "0123456789ABEKMHOPCTYX",
    GLOBAL: string.digits + string.ascii_uppercase,
}
RECOGNIZER_MAX_LENGTH: dict[str, int] = {LPRNET: 9, GLOBAL: 9}
RECOGNIZERS = tuple(RECOGNIZER_ALPHABETS)  # the order in which a region lists them

SEPARATORS = " -."
DIGITS = string.digits
LETTERS = string.ascii_uppercase
# Expansions of one pattern's repeats at most: a pattern is read by trying each (plates.reading).
MAX_EXPANSIONS = 256
_CODE = re.compile(r"^[a-z]{2}(?:-[a-z0-9]{1,3})?$")
_REPEAT = re.compile(r"\{(\d+)(?:,(\d+))?\}")


class FormatsError(ValueError):
    """The formats book (or an operator's file) is not valid: which row and why."""


class UnknownRegionError(ValueError):
    """A region code that the book does not know; the message lists the known ones."""


Slots = tuple[str, ...]  # one expansion of a pattern: the characters allowed at each position


@dataclass(frozen=True, slots=True)
class PlateFormat:
    """One pattern of one country, compiled: `expansions` are its fixed-length alternatives, each a
    tuple of the characters allowed at each position (sorted strings)."""

    country: str
    name: str
    pattern: str
    source: str
    prior: float = 1.0  # weight against the region's other formats when a read fits several
    recognizers: tuple[str, ...] = (GLOBAL,)  # its country's: the recognizers that read it
    # (read, written) pairs the country's plates do not tell apart (`same` in the book): where a
    # position allows both, their probabilities count together for the written one.
    same: tuple[tuple[str, str], ...] = ()
    expansions: tuple[Slots, ...] = field(default=(), repr=False, compare=False)
    regex: re.Pattern[str] = field(default=re.compile(r"(?!)"), repr=False, compare=False)

    @property
    def texts(self) -> int:
        """How many texts the format allows: of two that a text fits, the narrower says more."""
        return sum(math.prod(len(allowed) for allowed in slots) for slots in self.expansions)

    @property
    def key(self) -> str:
        """`country/name`: how events and reports name the format."""
        return f"{self.country}/{self.name}"

    def matches(self, text: str) -> bool:
        """Whether `text` (normalised: no separators) is a plate of this format."""
        return self.regex.fullmatch(text) is not None


@dataclass(frozen=True, slots=True)
class Country:
    code: str
    name: str
    recognizers: tuple[str, ...]
    formats: tuple[PlateFormat, ...]


@dataclass(frozen=True, slots=True)
class Region:
    """What a camera sees: the recognizers to run and the plate formats it accepts (in book order)."""

    code: str
    recognizers: tuple[str, ...]
    formats: tuple[PlateFormat, ...]

    def formats_for(self, recognizer: str) -> tuple[PlateFormat, ...]:
        """The formats this region reads through `recognizer` (those of countries that name it)."""
        return tuple(fmt for fmt in self.formats if recognizer in fmt.recognizers)

    def fit(self, text: str) -> PlateFormat | None:
        """The region's format that `text` matches (`best_fit`), or None."""
        return best_fit(text, self.formats)


def best_fit(text: str, formats: Iterable[PlateFormat]) -> PlateFormat | None:
    """Of the formats `text` matches, the one with the highest prior, then the narrowest (a Bucharest
    `B 123 ABC` is Romanian rather than an old British prefix plate), then the earliest; None if none."""
    fitting = [fmt for fmt in formats if fmt.matches(text)]
    return max(fitting, key=lambda fmt: (fmt.prior, -fmt.texts), default=None)


@dataclass(frozen=True, slots=True)
class Book:
    countries: Mapping[str, Country]
    regions: Mapping[str, tuple[str, ...]]  # region code -> its countries (each country is one too)

    def known_regions(self) -> frozenset[str]:
        return frozenset(self.countries) | frozenset(self.regions) | {AUTO_REGION}

    def region(self, code: str) -> Region:
        code = code.strip().lower()
        if code == AUTO_REGION:
            countries = tuple(self.countries)
        elif code in self.countries:
            countries = (code,)
        elif code in self.regions:
            countries = self.regions[code]
        else:
            known = ", ".join(sorted(self.known_regions()))
            raise UnknownRegionError(f"unknown region {code!r}; known regions: {known}")
        used = {name for country in countries for name in self.countries[country].recognizers}
        return Region(
            code=code,
            recognizers=tuple(name for name in RECOGNIZERS if name in used),
            formats=tuple(fmt for country in countries for fmt in self.countries[country].formats),
        )


# --- the pattern language -------------------------------------------------------------------


def _class(body: str) -> str:
    """The characters of a `[...]` body, ranges expanded."""
    chars: set[str] = set()
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = body[i], body[i + 2]
            if low > high or not (low.isalnum() and high.isalnum()):
                raise ValueError(f"bad range {low}-{high} in [{body}]")
            chars.update(chr(code) for code in range(ord(low), ord(high) + 1))
            i += 3
        else:
            chars.add(body[i])
            i += 1
    if not chars:
        raise ValueError("empty class []")
    return "".join(sorted(chars))


def parse_pattern(pattern: str, letters: str = LETTERS) -> list[tuple[str, int, int]]:
    """The pattern as (allowed characters, min repeats, max repeats) elements; ValueError says why
    a pattern is not one."""
    elements: list[tuple[str, int, int]] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char in SEPARATORS:
            i += 1
            continue
        if char == "A":
            allowed = "".join(sorted(letters))
        elif char == "0":
            allowed = DIGITS
        elif char == "*":
            allowed = "".join(sorted(set(letters) | set(DIGITS)))
        elif char == "[":
            end = pattern.find("]", i)
            if end < 0:
                raise ValueError(f"unclosed [ at position {i}")
            allowed = _class(pattern[i + 1 : end])
            i = end
        elif char == "{":
            repeat = _REPEAT.match(pattern, i)
            if repeat is None:
                raise ValueError(f"bad repeat at position {i}: write {{n}} or {{m,n}}")
            if not elements or elements[-1][1:] != (1, 1):
                raise ValueError(f"repeat at position {i} follows no single element")
            low = int(repeat.group(1))
            high = int(repeat.group(2)) if repeat.group(2) is not None else low
            if high < low or high == 0:
                raise ValueError(f"bad repeat {repeat.group(0)}: needs 0 <= m <= n, n >= 1")
            elements[-1] = (elements[-1][0], low, high)
            i = repeat.end()
            continue
        else:
            raise ValueError(
                f"unexpected {char!r} at position {i} (A letter, 0 digit, * either, [..] class, "
                f"{{m,n}} repeat, {SEPARATORS!r} separators; write other characters as a class: [{char}])"
            )
        elements.append((allowed, 1, 1))
        i += 1
    if not elements:
        raise ValueError("empty pattern")
    return elements


def expand(elements: list[tuple[str, int, int]], max_length: int | None = None) -> tuple[Slots, ...]:
    """Every fixed-length sequence of per-position classes the elements allow, at most `max_length`
    long (duplicates once)."""
    count = math.prod(high - low + 1 for _, low, high in elements)
    if count > MAX_EXPANSIONS:
        raise ValueError(f"{count} fixed-length alternatives, more than {MAX_EXPANSIONS}: narrow the repeats")
    choices = [[(allowed,) * n for n in range(low, high + 1)] for allowed, low, high in elements]
    seen: dict[Slots, None] = {}
    for combination in itertools.product(*choices):
        slots = tuple(itertools.chain.from_iterable(combination))
        if slots and (max_length is None or len(slots) <= max_length):
            seen.setdefault(slots, None)
    if not seen:
        raise ValueError(f"no alternative of 1 to {max_length} characters")
    return tuple(seen)


def _regex(expansions: Iterable[Slots]) -> re.Pattern[str]:
    alternatives = ("".join(f"[{re.escape(allowed)}]" for allowed in slots) for slots in expansions)
    return re.compile("(?:" + "|".join(alternatives) + ")")


def compile_format(
    country: str,
    name: str,
    pattern: str,
    source: str,
    prior: float,
    letters: str,
    recognizers: tuple[str, ...],
    max_length: int | None = None,
    same: tuple[tuple[str, str], ...] = (),
) -> PlateFormat:
    """One pattern compiled and checked against the recognizers' alphabets and lengths."""
    expansions = expand(parse_pattern(pattern, letters), max_length)
    for recognizer in recognizers:
        alphabet = RECOGNIZER_ALPHABETS[recognizer]
        foreign = sorted(
            {char for slots in expansions for allowed in slots for char in allowed} - set(alphabet)
        )
        if foreign:
            raise ValueError(f"characters {''.join(foreign)!r} that {recognizer} never reads")
        longest = max(len(slots) for slots in expansions)
        if longest > RECOGNIZER_MAX_LENGTH[recognizer]:
            raise ValueError(
                f"{longest} characters, {recognizer} reads {RECOGNIZER_MAX_LENGTH[recognizer]} at most"
            )
    if not (0 < prior <= 1):
        raise ValueError(f"prior {prior} is not in (0, 1]")
    if same and recognizers != (GLOBAL,):
        raise ValueError(f"`same` is read by {GLOBAL} only, not {', '.join(recognizers)}")
    return PlateFormat(
        country, name, pattern, source, prior, recognizers, same, expansions, _regex(expansions)
    )


# --- the book's file --------------------------------------------------------------------------


def _text(row: Mapping[str, object], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise FormatsError(f"{where}: `{key}` must be a non-empty string")
    return value


def _country(code: str, row: object) -> Country:
    where = f"country {code!r}"
    if not _CODE.fullmatch(code):
        raise FormatsError(f"{where}: a code is two lowercase letters, optionally -suffix (us-ca)")
    if not isinstance(row, dict):
        raise FormatsError(f"{where}: must be a table")
    unknown = set(row) - {"name", "recognizers", "letters", "same", "source", "formats"}
    if unknown:
        raise FormatsError(f"{where}: unknown keys {sorted(unknown)}")
    name = _text(row, "name", where)
    recognizers = row.get("recognizers")
    if not isinstance(recognizers, list) or not recognizers or not set(recognizers) <= set(RECOGNIZERS):
        raise FormatsError(f"{where}: `recognizers` must be a non-empty list of {list(RECOGNIZERS)}")
    letters = row.get("letters", LETTERS)
    if not isinstance(letters, str) or not letters or not set(letters) <= set(LETTERS):
        raise FormatsError(f"{where}: `letters` must be uppercase Latin letters")
    same = row.get("same", [])
    if not isinstance(same, list) or not all(
        isinstance(pair, str) and len(pair) == 2 and pair[0] != pair[1] and set(pair) <= set(LETTERS + DIGITS)
        for pair in same
    ):
        raise FormatsError(f'{where}: `same` must be a list of two-character strings such as "O0"')
    pairs = tuple((pair[0], pair[1]) for pair in same)
    default_source = row.get("source")
    rows = row.get("formats")
    if not isinstance(rows, list) or not rows:
        raise FormatsError(f"{where}: needs at least one [[countries.{code}.formats]] row")
    ordered = tuple(name for name in RECOGNIZERS if name in recognizers)
    formats: list[PlateFormat] = []
    for index, entry in enumerate(rows):
        at = f"{where} format {index + 1}"
        if not isinstance(entry, dict):
            raise FormatsError(f"{at}: must be a table")
        unknown = set(entry) - {"name", "pattern", "source", "prior", "max_length"}
        if unknown:
            raise FormatsError(f"{at}: unknown keys {sorted(unknown)}")
        format_name = _text(entry, "name", at)
        pattern = _text(entry, "pattern", at)
        source = entry.get("source", default_source)
        if not isinstance(source, str) or not source.strip():
            raise FormatsError(f"{at} ({format_name}): no `source` (here or on the country)")
        prior = entry.get("prior", 1.0)
        if isinstance(prior, bool) or not isinstance(prior, int | float):
            raise FormatsError(f"{at} ({format_name}): `prior` must be a number")
        max_length = entry.get("max_length")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)):
            raise FormatsError(f"{at} ({format_name}): `max_length` must be an integer")
        if any(fmt.name == format_name for fmt in formats):
            raise FormatsError(f"{at}: the name {format_name!r} is used twice")
        try:
            formats.append(
                compile_format(
                    code, format_name, pattern, source, float(prior), letters, ordered, max_length, pairs
                )
            )
        except ValueError as error:
            raise FormatsError(f"{at} ({format_name}) pattern {pattern!r}: {error}") from None
    return Country(code, name, ordered, tuple(formats))


def parse_book(data: Mapping[str, object]) -> Book:
    """The book from its parsed TOML; FormatsError on any bad row."""
    unknown = set(data) - {"countries", "regions"}
    if unknown:
        raise FormatsError(f"unknown top-level keys {sorted(unknown)} (expected countries, regions)")
    rows = data.get("countries")
    if not isinstance(rows, dict) or not rows:
        raise FormatsError("no [countries.<code>] rows")
    countries = {code: _country(code, row) for code, row in rows.items()}
    regions: dict[str, tuple[str, ...]] = {}
    region_rows = data.get("regions", {})
    if not isinstance(region_rows, dict):
        raise FormatsError("`regions` must be a table")
    for code, row in region_rows.items():
        where = f"region {code!r}"
        if code in countries or code == AUTO_REGION:
            raise FormatsError(f"{where}: the code is already a country's or `auto`")
        if not _CODE.fullmatch(code):
            raise FormatsError(f"{where}: a code is two lowercase letters, optionally -suffix")
        members = row.get("countries") if isinstance(row, dict) else None
        if not isinstance(members, list) or not members:
            raise FormatsError(f"{where}: needs `countries`, a non-empty list")
        missing = [member for member in members if member not in countries]
        if missing:
            raise FormatsError(f"{where}: countries not in the book: {missing}")
        regions[code] = tuple(members)
    return Book(countries, regions)


def load_book(path: Path | str | None = None) -> Book:
    """The shipped book, or an operator's own file in the same layout; FormatsError when it cannot
    be read or a row is bad."""
    file = Path(path) if path is not None else BOOK_PATH
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise FormatsError(f"cannot read the formats book {file}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise FormatsError(f"the formats book {file} is not TOML: {error}") from None
    try:
        return parse_book(data)
    except FormatsError as error:
        raise FormatsError(f"{file}: {error}") from None


# An operator's own book for every command and service of this installation (same layout as the
# shipped file): one variable, so that the worker, sightings, alerts and the console all read the same.
BOOK_VARIABLE = "STREAM_WORKER_PLATE_FORMATS"


@cache
def default_book() -> Book:
    """The book every region comes from: `$STREAM_WORKER_PLATE_FORMATS` when set, else the shipped one."""
    return load_book(os.environ.get(BOOK_VARIABLE) or None)


def known_regions() -> frozenset[str]:
    """Every region code the shipped book knows: its countries, its groups (eu) and `auto`."""
    return default_book().known_regions()


@cache
def region(code: str) -> Region:
    """The shipped book's region `code` (built once per code); UnknownRegionError (listing the known
    codes) otherwise."""
    return default_book().region(code)
