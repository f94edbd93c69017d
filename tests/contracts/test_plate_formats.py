"""The plate formats book: the shipped file, the pattern language and its errors, regions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_worker.contracts import PLATE_FORMAT
from stream_worker.contracts.plate_formats import (
    AUTO_REGION,
    DEFAULT_REGION,
    GLOBAL,
    LPRNET,
    MAX_EXPANSIONS,
    RECOGNIZER_ALPHABETS,
    FormatsError,
    UnknownRegionError,
    expand,
    known_regions,
    load_book,
    parse_pattern,
    region,
)

# A plate of each country as printed (separators and all), from the sources the book cites.
PRINTED = {
    "ru": ["A 123 BC 77", "B840CK197"],
    "gb": ["AB51 ABC", "LR23 XYZ", "P123 ABC"],
    "de": ["M-AB 1234", "HH-A 1", "KLE-XY 99", "B-E 123E"],
    "fr": ["AB-123-CD"],
    "pl": ["WA 12345", "KR 1234C", "PO 123AC", "WE 1C234", "GDA 1234".replace("1234", "C123")],
    "it": ["AB 123CD"],
    "es": ["1234 BCD", "M-1234-AB"],
    "nl": ["12-ABC-3", "AB-12-CD", "1-ABC-23", "XX-99-99"],
    "ro": ["CJ 12 ABC", "B 123 ABC", "B 12 XYZ"],
    "us": ["7ABC123", "ABC-1234", "1AB-2345", "A12-BCD", "FUW999", "CHICAG0"],
    "br": ["ABC-1234", "ABC1D23"],
    "ar": ["AAA 000", "AD 054 JI"],
}


def _plain(text: str) -> str:
    return re.sub(r"[ .\-]", "", text)


def test_the_shipped_book_loads_with_the_countries_the_issue_names():
    book = load_book()
    assert {"ru", "gb", "de", "fr", "pl", "it", "es", "nl", "ro", "us", "br", "ar"} <= set(book.countries)
    assert {"eu", AUTO_REGION, DEFAULT_REGION} <= known_regions()
    for country in book.countries.values():
        for fmt in country.formats:
            assert fmt.source.strip(), fmt.key
            assert fmt.recognizers == country.recognizers


@pytest.mark.parametrize("country", sorted(PRINTED))
def test_each_country_reads_its_printed_plates(country):
    fitting = region(country)
    for printed in PRINTED[country]:
        assert fitting.fit(_plain(printed)) is not None, printed


def test_the_default_region_is_russian_lprnet_only_as_today():
    ru = region(DEFAULT_REGION)
    assert ru.code == "ru"
    assert ru.recognizers == (LPRNET,)
    assert [fmt.key for fmt in ru.formats] == ["ru/private"]


@given(st.text(alphabet="0123456789ABEKMHOPCTYXDZ", max_size=10))
def test_the_russian_format_accepts_exactly_what_the_events_pattern_accepts(text):
    assert (region("ru").fit(text) is not None) == (re.match(PLATE_FORMAT, text) is not None)


def test_the_russian_format_on_both_lengths_of_region():
    ru = region("ru")
    assert ru.fit("B840CK197") and ru.fit("A123BC77")
    assert not ru.fit("B840CK1977") and not ru.fit("B840CK1") and not ru.fit("D840CK197")


def test_regions_group_countries_and_auto_runs_both_recognizers():
    europe = region("eu")
    assert europe.recognizers == (GLOBAL,)
    assert {fmt.country for fmt in europe.formats} >= {"gb", "de", "fr", "pl", "it", "es", "nl", "ro"}
    assert "ru" not in {fmt.country for fmt in europe.formats}
    auto = region(AUTO_REGION)
    assert auto.recognizers == (LPRNET, GLOBAL)
    assert {fmt.country for fmt in auto.formats} == set(load_book().countries)
    assert [fmt.country for fmt in auto.formats_for(LPRNET)] == ["ru"]
    assert "ru" not in {fmt.country for fmt in auto.formats_for(GLOBAL)}


def test_a_text_fits_the_highest_prior_then_the_narrowest_format():
    europe = region("eu")
    assert europe.fit("B123ABC").key == "ro/Bucharest"  # not gb/prefix, which allows more texts
    assert europe.fit("IS12ABC").key == "ro/county"  # CJ12ABC would also be British (gb/current)
    us = region("us")
    assert us.fit("ABC1234").key == "us/AAA0000"  # not the personalized fallback (prior 0.1)
    assert us.fit("HELLO").key == "us/personalized"


def test_a_region_code_is_read_case_insensitively():
    assert region(" US ").code == "us"


def test_an_unknown_region_lists_the_known_ones():
    with pytest.raises(UnknownRegionError) as error:
        region("xx")
    assert isinstance(error.value, ValueError)
    message = str(error.value)
    assert "'xx'" in message
    for code in ("ru", "us", "eu", "auto"):
        assert code in message


def test_the_pattern_language():
    assert parse_pattern("A0*") == [
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 1, 1),
        ("0123456789", 1, 1),
        ("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", 1, 1),
    ]
    assert parse_pattern("[A-CX]{2,3} -.[5]{2}") == [("ABCX", 2, 3), ("5", 2, 2)]
    assert parse_pattern("A", letters="BA") == [("AB", 1, 1)]
    assert expand(parse_pattern("[A]{1,2}[0]{0,1}")) == (("A",), ("A", "0"), ("A", "A"), ("A", "A", "0"))
    assert expand(parse_pattern("A{1,3}A{1,2}0"), max_length=3) == (
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZ",) * 2 + ("0123456789",),
    )


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("", "empty pattern"),
        ("A-B", "unexpected 'B'"),
        ("[AB", "unclosed ["),
        ("[]", "empty class"),
        ("[Z-A]", "bad range"),
        ("{2}A", "follows no single element"),
        ("A{2}{3}", "follows no single element"),
        ("A{3,1}", "bad repeat {3,1}"),
        ("A{x}", "bad repeat at position 1"),
        ("*{1,9}*{1,9}*{1,9}*{1,9}", f"more than {MAX_EXPANSIONS}"),
    ],
)
def test_a_bad_pattern_says_why(pattern, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        expand(parse_pattern(pattern))


def _book(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "book.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """
[countries.xx]
name = "Example"
recognizers = ["global"]
source = "https://example.org/plates"
[[countries.xx.formats]]
name = "standard"
pattern = "AA-000"
[[countries.xx.formats]]
name = "fallback"
pattern = "*{2,8}"
prior = 0.2
source = "https://example.org/fallback"
[regions.zz]
countries = ["xx"]
"""


def test_an_operators_own_book(tmp_path):
    book = load_book(_book(tmp_path, GOOD))
    assert book.known_regions() == {"xx", "zz", "auto"}
    zz = book.region("zz")
    assert zz.recognizers == (GLOBAL,)
    standard, fallback = zz.formats
    assert (standard.key, standard.prior, standard.source) == (
        "xx/standard",
        1.0,
        "https://example.org/plates",
    )
    assert (fallback.prior, fallback.source) == (0.2, "https://example.org/fallback")
    assert zz.fit("AB123") is standard and zz.fit("A1") is fallback and zz.fit("A") is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (('pattern = "AA-000"', 'pattern = "AA-00Q"'), "country 'xx' format 1 (standard) pattern 'AA-00Q'"),
        (('pattern = "AA-000"', 'pattern = "*{10}"'), "10 characters, global reads 9 at most"),
        (('recognizers = ["global"]', 'recognizers = ["lprnet"]'), "characters 'DFGIJLNQRSUVWZ' that lprnet"),
        (
            ('recognizers = ["global"]', 'recognizers = ["tesseract"]'),
            "`recognizers` must be a non-empty list",
        ),
        (("prior = 0.2", "prior = 2"), "prior 2.0 is not in (0, 1]"),
        (("prior = 0.2", 'prior = "high"'), "`prior` must be a number"),
        (('name = "fallback"', 'name = "standard"'), "the name 'standard' is used twice"),
        (('source = "https://example.org/plates"', ""), "format 1 (standard): no `source`"),
        (
            ('countries = ["xx"]', 'countries = ["xx", "yy"]'),
            "region 'zz': countries not in the book: ['yy']",
        ),
        (("[regions.zz]", "[regions.xx]"), "region 'xx': the code is already a country's"),
        (("[countries.xx]", "[countries.XX1]"), "country 'XX1': a code is two lowercase letters"),
        (('name = "Example"', 'name = "Example"\ncolour = "red"'), "unknown keys ['colour']"),
        (('pattern = "AA-000"', 'pattern = "AA-000"\nmax_length = "4"'), "`max_length` must be an integer"),
        (('pattern = "AA-000"', 'pattern = "AA-000"\nmax_length = 4'), "no alternative of 1 to 4 characters"),
        (('name = "Example"', 'name = "Example"\nsame = ["O"]'), "`same` must be a list of two-character"),
        (('name = "Example"', 'name = "Example"\nsame = ["O!"]'), "`same` must be a list of two-character"),
        (
            ('recognizers = ["global"]', 'recognizers = ["lprnet"]\nletters = "ABC"\nsame = ["O0"]'),
            "`same` is read by global only",
        ),
    ],
)
def test_a_bad_row_names_the_row_and_the_reason(tmp_path, change, reason):
    old, new = change
    assert old in GOOD
    path = _book(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(FormatsError, match=re.escape(reason)) as error:
        load_book(path)
    assert str(path) in str(error.value)


def test_an_unreadable_or_broken_file_is_a_formats_error(tmp_path):
    with pytest.raises(FormatsError, match="cannot read the formats book"):
        load_book(tmp_path / "missing.toml")
    with pytest.raises(FormatsError, match="is not TOML"):
        load_book(_book(tmp_path, "[countries.xx\n"))
    with pytest.raises(FormatsError, match=r"no \[countries.<code>\] rows"):
        load_book(_book(tmp_path, "[regions]\n"))


def test_the_latin_recognizers_alphabet_is_its_vocabulary():
    assert RECOGNIZER_ALPHABETS[GLOBAL] == "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
