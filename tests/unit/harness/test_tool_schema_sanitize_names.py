"""ToolNameCodec: deterministic, reversible, collision-checked vendor-safe function names."""

from __future__ import annotations

import re

from harness.providers._schema import ToolNameCodec

VENDOR = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_dots_become_double_underscores_and_decode_back() -> None:
    codec = ToolNameCodec(["fs.read", "mcp.git.git_status"])
    assert codec.encode("fs.read") == "fs__read"
    assert codec.encode("mcp.git.git_status") == "mcp__git__git_status"
    assert codec.decode("fs__read") == "fs.read"
    assert codec.decode("mcp__git__git_status") == "mcp.git.git_status"


def test_unknown_vendor_names_pass_through_unchanged() -> None:
    codec = ToolNameCodec(["fs.read"])
    assert codec.decode("shell__exec") == "shell__exec"
    assert codec.decode("fs.read") == "fs.read"


def test_colliding_plain_forms_both_get_distinct_hash_suffixes() -> None:
    codec = ToolNameCodec(["a.b__c", "a__b.c"])
    first, second = codec.encode("a.b__c"), codec.encode("a__b.c")
    assert first != second
    assert first != "a__b__c" and second != "a__b__c"
    assert codec.decode(first) == "a.b__c"
    assert codec.decode(second) == "a__b.c"
    assert codec.decode("a__b__c") == "a__b__c"  # the ambiguous form decodes to nothing


def test_too_long_names_get_a_stable_hash_within_64_chars() -> None:
    long_a = "mcp." + "x" * 70 + ".a"
    long_b = "mcp." + "x" * 70 + ".b"
    codec = ToolNameCodec([long_a, long_b])
    encoded_a, encoded_b = codec.encode(long_a), codec.encode(long_b)
    assert VENDOR.match(encoded_a) and VENDOR.match(encoded_b)
    assert encoded_a != encoded_b
    assert codec.decode(encoded_a) == long_a
    assert ToolNameCodec([long_b, long_a]).encode(long_a) == encoded_a  # order-independent


def test_names_with_characters_vendors_reject_are_hashed_into_the_alphabet() -> None:
    codec = ToolNameCodec(["mcp.srv.do thing", "web.fetch/url"])
    for name in ("mcp.srv.do thing", "web.fetch/url"):
        assert VENDOR.match(codec.encode(name))
        assert codec.decode(codec.encode(name)) == name


def test_mapping_is_the_same_whatever_the_input_order() -> None:
    names = ["fs.read", "fs.write", "a.b__c", "a__b.c", "mcp.git.git_log"]
    assert ToolNameCodec(names).mapping == ToolNameCodec(list(reversed(names))).mapping


def test_for_request_covers_history_names_outside_the_tool_list() -> None:
    tools = [{"type": "function", "function": {"name": "fs.read", "parameters": {}}}]
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "fs.delete", "arguments": "{}"},
                }
            ],
        }
    ]
    codec = ToolNameCodec.for_request(tools, history)
    assert codec.decode("fs__delete") == "fs.delete"
    assert codec.decode("fs__read") == "fs.read"
