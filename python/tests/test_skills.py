"""ctxkit.Skills without any framework."""

import threading
from pathlib import Path

import pytest

import ctxkit


def test_a_trigger_selects_its_skill_and_says_why(skills_dir):
    skills = ctxkit.Skills([str(skills_dir)])
    assert skills.match("Say bonjour to Alice") == ["hello-extended"]
    assert skills.explain("They greeted Bob") == [
        {"name": "hello-extended", "reason": "triggered", "triggers": ["greet (as greeted)"]}
    ]
    assert skills.match("What is 2+2?") == []
    assert skills.match("Othello") == []


def test_context_is_the_selected_bodies_and_nothing_for_a_miss(skills_dir):
    skills = ctxkit.Skills([skills_dir])
    body = (skills_dir / "hello-extended" / "SKILL.md").read_text().split("---", 2)[2].strip()
    text = skills.context("Say bonjour to Alice")
    assert body.splitlines()[0] in text
    assert "## hello-extended" in text
    assert "## sql-helper" not in text
    assert skills.context("What is 2+2?") == ""


def test_max_skills_caps_the_triggered_ones(tmp_path: Path):
    for name in ["alpha", "beta", "gamma"]:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {name} skill\ntriggers: [deploy]\n---\nDo {name}.\n"
        )
    assert len(ctxkit.Skills([tmp_path], max_skills=2).match("deploy it")) == 2
    assert len(ctxkit.Skills([tmp_path], max_skills=3).match("deploy it")) == 3


def test_full_mode_sends_every_body(skills_dir):
    triggered = ctxkit.Skills([skills_dir]).context("What is 2+2?")
    full = ctxkit.Skills([skills_dir], mode="full").context("What is 2+2?")
    assert triggered == ""
    assert "## sql-helper" in full
    assert "## hello-extended" in full


def test_hybrid_mode_adds_the_catalog_and_the_tools_to_read_it(skills_dir):
    skills = ctxkit.Skills([skills_dir], mode="hybrid")
    text = skills.context("Say bonjour to Alice")
    catalog = text.index("## Available skills")
    assert "sql-helper" in text[catalog:]
    assert text.index("## hello-extended") > catalog, "stable catalog first, per-message bodies after"
    tools = {t.name: t for t in skills.context_for([("user", "What is 2+2?")]).tools}
    assert set(tools) == {"read_skill", "read_skills"}
    assert "Multi-language greetings" in tools["read_skill"].call('{"name": "hello-extended"}')
    with pytest.raises(ctxkit.CtxkitError, match="no skill is named `../../etc/passwd`"):
        tools["read_skill"].call('{"name": "../../etc/passwd"}')
    assert ctxkit.Skills([skills_dir]).context_for([("user", "What is 2+2?")]).tools == []


def test_reload_sees_a_new_skill(tmp_path: Path):
    skills = ctxkit.Skills([tmp_path])
    assert len(skills) == 0
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Ship it\ntriggers: [deploy]\n---\nRun the pipeline.\n"
    )
    assert skills.match("deploy now") == []
    skills.reload()
    assert skills.match("deploy now") == ["deploy"]
    assert skills.skills()[0]["triggers"] == ["deploy"]


def test_a_broken_skill_file_is_a_diagnostic_not_a_failure(tmp_path: Path):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "SKILL.md").write_text("---\nname: good\ndescription: Fine\ntriggers: [deploy]\n---\nGo.\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_text("---\nname: [unclosed\n---\nBody.\n")
    skills = ctxkit.Skills([tmp_path])
    assert skills.match("deploy") == ["good"]
    problems = skills.diagnostics()
    assert any("bad/SKILL.md" in p for p in problems), problems


def test_bad_arguments_are_one_sentence_errors(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="does not exist or is not a folder"):
        ctxkit.Skills([tmp_path / "missing"])
    with pytest.raises(ValueError, match="unknown skill mode `loud`"):
        ctxkit.Skills([tmp_path], mode="loud")
    with pytest.raises(ValueError, match="no skills folder"):
        ctxkit.Skills([])
    with pytest.raises(ValueError, match="unknown message role"):
        ctxkit.Skills([tmp_path]).context_for([("robot", "hi")])


def test_only_the_first_100000_characters_of_a_message_are_read(skills_dir):
    skills = ctxkit.Skills([skills_dir])
    filler = "é" * 99_990
    assert skills.match(filler + " bonjour") == ["hello-extended"]
    assert skills.match(filler + " " * 20 + "bonjour") == []
    assert skills.context_for([("user", filler + " " * 20 + "bonjour")]).text is None


def test_one_instance_serves_many_threads(skills_dir):
    skills = ctxkit.Skills([skills_dir])
    seen = []

    def work():
        for _ in range(200):
            seen.append(tuple(skills.match("Say bonjour to Alice")))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(seen) == {("hello-extended",)}
    assert len(seen) == 800
