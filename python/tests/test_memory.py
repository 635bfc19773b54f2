"""ctxkit.Memory without any framework."""

import pytest

import ctxkit

SECRET = "AKIAIOSFODNN7EXAMPLE"


def test_add_search_list_delete(db):
    memory = ctxkit.Memory(db, "/src/shop")
    pnpm = memory.add("Always use pnpm, never npm, for installing packages", category="preference", importance=0.9)
    memory.add("The API lives in src/routes", category="convention")
    found = memory.search("install lodash with pnpm")
    assert found[0]["id"] == pnpm
    assert found[0]["category"] == "preference"
    assert found[0]["importance"] == 0.9
    assert found[0]["score"] > 0
    assert {m["id"] for m in memory.list()} >= {pnpm}
    memory.delete(pnpm)
    assert pnpm not in {m["id"] for m in memory.list()}
    with pytest.raises(KeyError, match="no memory with id"):
        memory.delete(pnpm)


def test_projects_are_walls(db):
    shop = ctxkit.Memory(db, "/src/shop")
    blog = ctxkit.Memory(db, "/src/blog")
    kept = shop.add("Deploys go out on Thursdays")
    assert blog.search("when do deploys go out") == []
    with pytest.raises(KeyError):
        blog.delete(kept)
    assert shop.list()[0]["id"] == kept


def test_a_secret_is_refused_without_being_echoed(db):
    memory = ctxkit.Memory(db, "/src/shop")
    with pytest.raises(ValueError) as refused:
        memory.add(f"the deploy key is {SECRET}")
    assert "aws-access-key-id" in str(refused.value)
    assert SECRET not in str(refused.value)
    assert memory.list() == []


def test_bad_input_is_a_value_error(db):
    memory = ctxkit.Memory(db, "/src/shop")
    with pytest.raises(ValueError, match="unknown memory category `rumour`"):
        memory.add("x", category="rumour")
    with pytest.raises(ValueError, match="invalid memory"):
        memory.add("   ")


def test_a_url_that_is_not_postgres_is_refused_without_its_password(tmp_path):
    with pytest.raises(ValueError, match="neither a SQLite file nor a postgres:// URL") as refused:
        ctxkit.Memory("mysql://admin:hunter2secret@db/memory", "/src/shop")
    assert "hunter2secret" not in str(refused.value)


def test_an_unreachable_server_is_a_ctxkit_error_without_its_password():
    memory = ctxkit.Memory("postgres://admin:hunter2secret@127.0.0.1:1/memory", "/src/shop")
    with pytest.raises(ctxkit.CtxkitError, match="cannot connect to memory database") as failed:
        memory.list()
    assert "hunter2secret" not in str(failed.value)


def test_an_unopenable_database_is_a_ctxkit_error(tmp_path):
    with pytest.raises(ctxkit.CtxkitError, match="cannot open memory database"):
        ctxkit.Memory(str(tmp_path / "no" / "such" / "dir" / "m.db"), "/src/shop")


def test_a_run_counts_what_it_injected_and_carries_out_remember(db):
    memory = ctxkit.Memory(db, "/src/shop")
    pnpm = memory.add("Always use pnpm for installing packages", category="preference", importance=0.9)
    run = memory.invoking([("user", "install lodash")], "thread-1")
    assert "Always use pnpm" in run.text
    memory.run_finished(run, "Done.")
    assert next(m for m in memory.list() if m["id"] == pnpm)["access_count"] == 1

    run = memory.invoking([("user", "remember that the staging database is read-only")])
    memory.run_finished(run, "Noted.")
    assert any("staging database is read-only" in m["content"] for m in memory.list())
