"""Principal names compared by skeleton: a disguised name is the same person, never another."""

from __future__ import annotations

import json
import unicodedata
from importlib import resources

from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core._identity import look_alike, name_problem, same_person, skeleton

DISGUISES = {
    "zero-width space": "alice\u200b",
    "zero-width joiner inside": "al\u200dice",
    "bidi mark": "\u200ealice",
    "full-width a": "\uff41lice",
    "Cyrillic i": "al\u0456ce",
    "Cyrillic a": "\u0430lice",
    "Greek omicron": "b\u03bfb",
    "upper case": "ALICE",
    "mathematical bold": "\U0001d41alice",
    "no-break space around": "\u00a0alice\u00a0",
    "soft hyphen": "ali\u00adce",
    "variation selector": "alice\ufe0f",
}

CONFUSABLES: dict[str, str] = json.loads(
    resources.files("governance").joinpath("data/confusables.json").read_text("utf-8")
)["map"]
# Look-alikes of each ASCII letter, from the packaged table.
LOOK_ALIKES: dict[str, list[str]] = {}
for source, target in CONFUSABLES.items():
    if len(target) == 1 and target.isalpha():
        LOOK_ALIKES.setdefault(target, []).append(source)

INVISIBLE = st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\u202e"])
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=16)


def test_every_disguise_from_the_review_is_the_same_person_as_the_plain_name() -> None:
    for label, name in DISGUISES.items():
        plain = "bob" if "Greek" in label else "alice"
        assert same_person(name, plain), label
        assert skeleton(name) == plain, label


def test_different_people_stay_different() -> None:
    assert not same_person("alice", "alicia")
    assert not same_person("bob", "rob")
    assert not same_person("ann", "anne")


def test_names_with_invisible_characters_are_refused_with_the_code_point_named() -> None:
    problem = name_problem("alice\u200b")
    assert problem is not None and "U+200B" in problem
    assert name_problem("\u200b\u200c") is not None
    assert name_problem("Alice Smith") is None
    assert name_problem("\uff41lice") is None  # visible, folds to alice: caught by comparison


def test_a_look_alike_of_a_known_name_spelled_differently_is_named() -> None:
    assert look_alike("al\u0456ce", ["bob", "alice"]) == "alice"
    assert look_alike("Alice", ["alice"]) is None, "case is not a different spelling"
    assert look_alike("carol", ["alice", "bob"]) is None


@settings(max_examples=300, deadline=None)
@given(name=NAMES, data=st.data())
def test_invisible_characters_anywhere_never_change_who_a_name_is(
    name: str, data: st.DataObject
) -> None:
    spots = data.draw(st.lists(st.integers(0, len(name)), min_size=1, max_size=4))
    disguised = name
    for spot in sorted(spots, reverse=True):
        disguised = disguised[:spot] + data.draw(INVISIBLE) + disguised[spot:]
    assert skeleton(disguised) == skeleton(name)
    assert name_problem(disguised) is not None


@settings(max_examples=300, deadline=None)
@given(name=NAMES, data=st.data())
def test_swapping_letters_for_confusables_or_wide_forms_never_makes_another_person(
    name: str, data: st.DataObject
) -> None:
    out = []
    for ch in name:
        choice = data.draw(st.sampled_from(["keep", "upper", "wide", "confusable"]))
        if choice == "upper":
            out.append(ch.upper())
        elif choice == "wide" and "!" <= ch <= "~":
            out.append(chr(ord(ch) + 0xFEE0))  # the full-width form of an ASCII character
        elif choice == "confusable" and LOOK_ALIKES.get(ch):
            out.append(data.draw(st.sampled_from(LOOK_ALIKES[ch])))
        else:
            out.append(ch)
    disguised = "".join(out)
    assert same_person(disguised, name), (disguised, name)
    if unicodedata.normalize("NFC", disguised).casefold() != name.casefold():
        assert look_alike(disguised, [name]) == name


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=24))
def test_skeleton_is_a_fixed_point_for_any_text(text: str) -> None:
    once = skeleton(text)
    assert skeleton(once) == once
    assert same_person(text, once)
