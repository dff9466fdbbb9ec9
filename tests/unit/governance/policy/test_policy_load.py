"""Loading policy files: errors that name file and line, digests, and hot reload."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from governance import PolicyError
from governance.policy._load import PolicyFile, load_policy, parse_policy

VALID = """\
version: 1
defaults:
  unknown_tool: block
  no_match: block
rules:
  - id: reads
    description: reads are fine
    effect: allow
    match:
      action_type: [read]
  - id: no-delete
    description: never delete
    effect: block
    match: {tool: fs.delete}
"""


def _error(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "policy.yaml")
    return info.value


def test_a_valid_policy_compiles_with_its_rules_in_file_order() -> None:
    policy = parse_policy(VALID, "policy.yaml")
    assert policy.rule_ids == ("reads", "no-delete")
    assert policy.path == "policy.yaml"
    assert policy.defaults.unknown_tool == "block"
    assert policy.digest.startswith("sha256:") and len(policy.digest) == 71


def test_comments_formatting_and_rule_order_do_not_change_the_digest() -> None:
    reformatted = """\
# a comment
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: no-delete, description: never delete, effect: block, match: {tool: [fs.delete]}}
  - id: reads
    description: reads are fine   # trailing comment
    effect: allow
    enabled: true
    match: {action_type: read}
"""
    assert parse_policy(reformatted).digest == parse_policy(VALID).digest


def test_any_semantic_change_changes_the_digest() -> None:
    base = parse_policy(VALID).digest
    assert parse_policy(VALID.replace("fs.delete", "fs.remove")).digest != base
    assert parse_policy(VALID.replace("effect: allow", "effect: block")).digest != base
    assert parse_policy(VALID.replace("never delete", "no deleting")).digest != base
    assert (
        parse_policy(VALID.replace("unknown_tool: block", "unknown_tool: require_approval")).digest
        != base
    )


def test_a_bad_effect_names_file_line_field_and_the_allowed_values() -> None:
    text = VALID.replace("effect: block", "effect: deny")
    error = _error(text)
    assert error.path == "policy.yaml" and error.line == 13
    assert str(error) == (
        "policy.yaml:13: rules[1].effect: Input should be 'allow', 'require_approval' or 'block'"
    )


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", 1, "empty"),
        ("# only a comment\n\n", 1, "empty"),
        ("version: 1\nrules: []\n", 2, "no rules"),
        ("version: 1\nrules:\n", 2, "rules"),
        ("- version: 1\n", 1, "must be a mapping"),
        ("version: 2\nrules: []\n", 1, "Input should be 1"),
        ("version: true\nrules: [{id: a, effect: allow, match: {}}]\n", 1, "number 1"),
        ("rules: [{id: a, effect: allow, match: {}}]\n", 1, "missing required key 'version'"),
        (VALID.replace("unknown_tool: block", "unknown_tool: allow"), 3, "fails closed"),
        (VALID.replace("no_match: block", "no_match: allow"), 4, "fails closed"),
        (VALID.replace("no_match: block", "no_match: require_approval"), 4, "Input should be"),
        (VALID.replace("  - id: reads", "  - id: Reads"), 6, "rule id 'Reads'"),
        (VALID.replace("  - id: reads", "  - id: -reads"), 6, "rule id '-reads'"),
        (VALID.replace("id: no-delete", "id: reads"), 11, "duplicate rule id 'reads'"),
        (VALID.replace("      action_type: [read]", "      action_typ: [read]"), 10, "unknown key"),
        (VALID.replace("      action_type: [read]", "      action_type: [reed]"), 10, "'read'"),
        (VALID.replace("    effect: allow\n", ""), 6, "missing required key 'effect'"),
        (VALID.replace("match: {tool: fs.delete}", "match: {tool: []}"), 14, "at least 1"),
        (VALID.replace("match: {tool: fs.delete}", "match: {tool: 7}"), 14, "string or a list"),
        (VALID.replace("    effect: allow\n", "    effect: allow\n    extra: 1\n"), 9, "'extra'"),
        (VALID + "quotas: {}\n", 15, "unknown key 'quotas'"),
        (
            VALID.replace("match: {tool: fs.delete}", "match: {min_tokens_used: -1}"),
            14,
            "greater than or equal to 0",
        ),
        (VALID.replace("match: {tool: fs.delete}", "match: {tainted: 'yes'}"), 14, "boolean"),
        (
            VALID.replace("    effect: block\n", "    effect: block\n    enabled: 'no'\n"),
            14,
            "bool",
        ),
    ],
)
def test_malformed_policies_are_refused_with_file_line_and_what_to_do(
    text: str, line: int, fragment: str
) -> None:
    error = _error(text)
    assert error.path == "policy.yaml"
    assert error.line == line, str(error)
    assert fragment in error.message, str(error)


WHEN = """\
version: 1
rules:
  - id: r
    effect: allow
    match: {}
    when:
      - arg: path
        path_prefix: reports/
      - arg: note
        {check}
"""


@pytest.mark.parametrize(
    ("check", "line", "fragment"),
    [
        ("regex: '[a-z'", 10, "invalid regular expression"),
        ("regex: '(?P<x>a)(?P<x>b)'", 10, "invalid regular expression"),
        ("negate: true", 9, "has no check"),
        ("regex: a\n        enum: [a]", 11, "has 2 checks"),
        ("min: 1\n        max_length: 3", 11, "has 2 checks"),
        ("min: 5\n        max: 1", 11, "greater than max"),
        ("min: '5'", 10, "must be a number"),
        ("min: .nan", 10, "finite"),
        ("enum: []", 10, "at least 1"),
        ("enum: [{a: 1}]", 10, "strings, numbers or booleans"),
        ("max_length: -1", 10, "greater than or equal to 0"),
        ("sql_read_only: false", 10, "Input should be True"),
        ("path_prefix: ''", 10, "path_prefix"),
        ("path_prefix: .", 10, "path_prefix"),
        ("path_prefix: /etc", 10, "path_prefix"),
        ("path_prefix: ../x", 10, "path_prefix"),
        ("regex: a\n        flags: i", 11, "unknown key 'flags'"),
    ],
)
def test_malformed_when_conditions_are_refused_at_their_line(
    check: str, line: int, fragment: str
) -> None:
    error = _error(WHEN.replace("{check}", check))
    assert error.line == line, str(error)
    assert fragment in error.message, str(error)


def test_when_without_a_condition_is_fine_but_an_arg_alone_is_not() -> None:
    assert parse_policy(WHEN.replace("{check}", "regex: '[a-z]+'")).rules[0].when[1].arg == "note"
    assert "has no check" in _error(WHEN.replace("{check}", "")).message


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("version: 1\nversion: 1\nrules: []\n", 2, "duplicate key 'version' (first on line 1)"),
        (
            VALID.replace("    effect: allow\n", "    effect: allow\n    effect: block\n"),
            9,
            "duplicate key 'effect' in rules[0]",
        ),
        (
            VALID.replace("match: {tool: fs.delete}", "match: {tool: fs.delete, tool: fs.read}"),
            14,
            "duplicate key 'tool' in rules[1].match",
        ),
    ],
)
def test_duplicate_yaml_keys_are_an_error_not_a_silent_last_wins(
    text: str, line: int, fragment: str
) -> None:
    error = _error(text)
    assert error.line == line, str(error)
    assert fragment in error.message


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("version: 1\nrules: [\n", 3),
        ("version: 1\nrules:\n  - id: a\n\teffect: allow\n", 4),
        ("version: 1\nrules:\n  - id: 'a\n", 3),
        ("version: 1\n---\nversion: 1\n", 2),
    ],
)
def test_yaml_syntax_errors_report_the_problem_line(text: str, line: int) -> None:
    error = _error(text)
    assert error.line == line, str(error)
    assert error.message.startswith("invalid YAML")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("version: !!python/object:os.system 1\nrules: []\n", "invalid YAML"),
        ("a: &x [*x]\n", "refers to itself"),
        ("base: &b {effect: allow}\nrules:\n  - <<: *b\n", "merge keys"),
        ("version: 1\n1: x\n", "must be a string"),
        ("version: 1\n[a]: x\n", "plain string"),
        ("version: 1\nrules: !!set {a}\n", "tag"),
    ],
)
def test_unsafe_or_unsupported_yaml_is_refused(text: str, fragment: str) -> None:
    assert fragment in _error(text).message


def test_several_problems_are_all_reported_in_line_order() -> None:
    text = VALID.replace("effect: block", "effect: deny").replace("[read]", "[reed]")
    error = _error(text)
    assert error.line == 10
    assert "policy.yaml:13: rules[1].effect" in error.message


def test_load_policy_reads_a_file_and_names_it_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(VALID, encoding="utf-8")
    assert load_policy(path).path == str(path)
    path.write_text(VALID.replace("effect: block", "effect: nope"), encoding="utf-8")
    with pytest.raises(PolicyError, match=rf"^{path}:13: rules\[1\]\.effect"):
        load_policy(path)


def test_a_missing_or_non_utf8_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read the policy file"):
        load_policy(tmp_path / "absent.yaml")
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"version: 1\n# caf\xe9\n")
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert info.value.line == 2 and "UTF-8" in info.value.message


# -- PolicyFile ----------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def test_an_unchanged_file_is_not_reparsed(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    first = source.current()
    for _ in range(20):
        assert source.current() is first
    assert source.reloads == 0
    assert source.path == path


def test_rewriting_the_same_bytes_is_not_reparsed(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    first = source.current()
    os.utime(path, ns=(1, 1))
    _write(path, VALID)
    assert source.current() is first
    assert source.reloads == 0


def test_an_edit_applies_on_the_next_call_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    assert source.current().rules[0].effect == "allow"
    _write(path, VALID.replace("effect: allow", "effect: block"))  # same size, same inode
    assert source.current().rules[0].effect == "block"
    assert source.reloads == 1


SETTLED_NS = 1_000_000_000 * 1_000_000_000  # 2001-09-09: an mtime long past any racy window


def test_a_same_size_edit_with_the_mtime_restored_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    os.utime(path, ns=(SETTLED_NS, SETTLED_NS))
    before = os.stat(path)
    source = PolicyFile(path)
    first = source.current()
    assert first.rules[0].effect == "allow"
    _write(path, VALID.replace("effect: allow", "effect: block"))  # same size, same inode
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == (
        before.st_size,
        before.st_ino,
        before.st_mtime_ns,
    )
    assert source.current().rules[0].effect == "block"
    _write(path, VALID)  # and back, again behind the same stat
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert source.current().rules[0].effect == "allow"
    assert source.reloads == 2


def test_a_same_size_edit_is_seen_however_long_the_file_was_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    os.utime(path, ns=(SETTLED_NS, SETTLED_NS))
    source = PolicyFile(path)
    for _ in range(50):
        assert source.current().rules[0].effect == "allow"
    with path.open("r+b") as handle:  # an in-place write of the same bytes count
        text = handle.read().replace(b"effect: allow", b"effect: block")
        handle.seek(0)
        handle.write(text)
    os.utime(path, ns=(SETTLED_NS, SETTLED_NS))
    assert source.current().rules[0].effect == "block"


def test_a_file_that_turns_bad_raises_on_every_call_until_fixed(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    source.current()
    _write(path, "version: 1\nrules: [")
    for _ in range(2):
        with pytest.raises(PolicyError, match=r"policy.yaml:2: invalid YAML"):
            source.current()
    _write(path, VALID.replace("never delete", "no deleting"))
    assert source.current().rules[1].description == "no deleting"


def test_a_deleted_policy_file_raises_instead_of_keeping_the_old_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    source.current()
    path.unlink()
    with pytest.raises(PolicyError, match="cannot read the policy file"):
        source.current()


def test_a_policy_file_that_is_bad_from_the_start_refuses_to_construct(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, "version: 1\nrules: []\n")
    with pytest.raises(PolicyError, match=r"policy.yaml:2: rules: the policy has no rules"):
        PolicyFile(path)


def test_an_atomically_replaced_file_is_picked_up(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    stat = os.stat(path)
    replacement = tmp_path / "policy.yaml.new"
    _write(replacement, VALID.replace("effect: allow", "effect: block"))
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(replacement, path)  # same size and mtime, new inode
    assert source.current().rules[0].effect == "block"


def test_concurrent_readers_all_get_a_policy_and_parse_once_per_change(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    _write(path, VALID.replace("effect: allow", "effect: block"))
    os.utime(path, ns=(10**18, 10**18))
    barrier = threading.Barrier(8)
    seen: list[str] = []
    lock = threading.Lock()

    def read() -> None:
        barrier.wait(timeout=5)
        for _ in range(25):
            effect = source.current().rules[0].effect
            with lock:
                seen.append(effect)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    assert seen == ["block"] * 200
    assert source.reloads == 1


def test_an_mtime_in_the_future_is_never_trusted(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    _write(path, VALID)
    source = PolicyFile(path)
    stat = os.stat(path)
    _write(path, VALID.replace("effect: allow", "effect: block"))
    try:
        os.utime(path, ns=(stat.st_atime_ns, 2**62))
    except OSError:
        pytest.skip("this filesystem cannot hold that mtime")
    assert source.current().rules[0].effect == "block"
    _write(path, VALID)
    os.utime(path, ns=(stat.st_atime_ns, 2**62))
    assert source.current().rules[0].effect == "allow"
