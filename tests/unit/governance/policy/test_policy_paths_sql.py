"""The two condition kinds attackers aim at: path prefixes and read-only SQL."""

from __future__ import annotations

import pytest

from governance.policy._rules import PathPrefixCheck, is_read_only_sql

REPORTS = PathPrefixCheck("reports")
SECRETS = PathPrefixCheck("secrets")


@pytest.mark.parametrize(
    ("path", "passes"),
    [
        ("reports/a.txt", True),
        ("reports/sub/dir/a.txt", True),
        ("reports", True),
        # Only canonical spellings are judged (the firewall hands the tool exactly those);
        # any other spelling of even a harmless path fails, negated or not.
        ("reports//a.txt", False),
        ("./reports/a.txt", False),
        ("reports/", False),
        ("reports/../secrets.txt", False),
        ("reports/./a/../../x", False),
        ("reports\\..\\x", False),
        ("/etc/passwd", False),
        ("/reports/a.txt", False),
        ("..", False),
        ("../reports/a.txt", False),
        ("reportsX/a", False),
        ("reports.txt", False),
        ("Reports/a.txt", False),
        ("x/reports/a.txt", False),
    ],
)
def test_prefix_check_judges_canonical_paths_by_whole_components(path: str, passes: bool) -> None:
    assert REPORTS.test(path, negate=False) is passes


@pytest.mark.parametrize(
    ("path", "passes"),
    [
        ("reports/a.txt", True),
        ("secretsX/a", True),
        ("secrets/key", False),
        ("secrets", False),
        ("reports/../secrets/key", False),
        ("reports/../reports/a.txt", False),  # harmless, but not canonical: not judged
        ("secrets\\..\\reports/a.txt", False),
        ("secrets/a\\../../api_keys.txt", False),
        ("SECRETS/key", False),  # would be the same directory on a case-insensitive disk
        ("Secrets/key", False),
        ("/etc/passwd", False),  # not under secrets/, but absolute: never passes
        ("../outside", False),
        ("..", False),
    ],
)
def test_a_negated_prefix_still_refuses_escaping_paths_and_case_tricks(
    path: str, passes: bool
) -> None:
    assert SECRETS.test(path, negate=True) is passes


@pytest.mark.parametrize(
    "sql",
    [
        "select 1",
        "SELECT * FROM orders WHERE id = 3",
        "select * from t;",
        "select * from t; -- trailing comment",
        "WITH a AS (SELECT 1) SELECT * FROM a",
        "with recursive n(x) as (select 1 union all select x + 1 from n) select x from n",
        "select 'drop table' from t",
        "select 'it''s; delete from t' from t",
        'select "order" from t',
        "select `a'b` from t",
        "select a /* delete me? no */ from t",
        "(select 1) union (select 2)",
        "select count(*) as updated_rows from t where note like '%;%'",
    ],
)
def test_read_only_sql_accepts_a_single_select(sql: str) -> None:
    assert is_read_only_sql(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "",
        "   ;",
        "select 1; drop table x",
        "select 1;drop table x;",
        "select 1;;",
        "SELECT 1; SELECT 2",
        "delete from t",
        "insert into t values (1)",
        "update t set a = 1",
        "drop table t",
        "pragma writable_schema = on",
        "PRAGMA table_info(t)",
        "attach database 'x.db' as x",
        "select * from t where 1; attach database 'x.db' as x",
        "vacuum",
        "replace into t values (1)",
        "create table t (a)",
        "alter table t add column b",
        "WITH a AS (SELECT 1) DELETE FROM t",
        "WITH a AS (DELETE FROM t RETURNING *) SELECT * FROM a",
        "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a",
        "select * into backup from t",
        "select load_extension('evil.so')",
        "explain select 1",
        "values (1)",
        "select 1 -- ; \n; drop table x",
        "select 1 /* */; drop table x",
        "select 1 /* unterminated",
        "select 'unterminated",
        "select 1 /* /* nested */ drop table x */",
        "select 'a\\' ; drop table x; -- '",
        "select 'a\\'' ; drop table x; -- '",  # MySQL reads \' as an escaped quote
        "select 1 # it's \n ; drop table x; '",
        "select $$ ' $$; drop table x; --'",
        "select `a'b`; drop table x; -- '",
        "select [a'] from t",
        "select 1\x00; drop table x",
        "SeLeCt 1; DrOp TaBlE x",
        "with a as (select 1) select * from a; vacuum",
    ],
)
def test_read_only_sql_refuses_writes_chains_and_anything_ambiguous(sql: str) -> None:
    assert not is_read_only_sql(sql)


def test_read_only_sql_refuses_hidden_statements_even_behind_comments() -> None:
    assert not is_read_only_sql("select 1 --\ndrop table x")
    assert not is_read_only_sql("select 1 /* comment */ ; /* */ delete from t")
    assert is_read_only_sql("select 1 -- ; drop table x")  # all of it is a comment
