"""The providers inside a real Microsoft Agent Framework Agent, with a stand-in chat client
that records what it is sent."""

import asyncio

import pytest

agent_framework = pytest.importorskip("agent_framework")
from agent_framework import Agent, BaseChatClient, ChatResponse, Message  # noqa: E402

import ctxkit  # noqa: E402
from ctxkit.maf import MemoryContextProvider, SkillContextProvider  # noqa: E402


class RecordingClient(BaseChatClient):
    """Answers "Done." and keeps every request as (role, text) pairs, the agent's
    instructions first as the system message a real client would send."""

    def __init__(self):
        super().__init__()
        self.requests = []
        self.tools = []

    async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        system = [("system", options["instructions"])] if options.get("instructions") else []
        self.requests.append(system + [(str(m.role), m.text) for m in messages])
        self.tools.append([t.name for t in options.get("tools") or []])
        return ChatResponse(messages=[Message(role="assistant", contents=["Done."])], response_id="r")


def sent(client):
    """Everything the last request carried, as one text."""
    return "\n".join(text for _, text in client.requests[-1])


def run(agent, message):
    return asyncio.run(agent.run(message))


def test_the_matched_skill_reaches_the_model_and_a_miss_adds_nothing(skills_dir):
    client = RecordingClient()
    agent = Agent(client=client, instructions="Be brief.", context_providers=[SkillContextProvider(skills=[skills_dir])])
    run(agent, "Say bonjour to Alice")
    assert "## hello-extended" in sent(client)
    assert "Multi-language greetings" in sent(client)

    run(agent, "What is 2+2?")
    assert "hello-extended" not in sent(client)
    assert sent(client).startswith("Be brief.")


def test_hybrid_mode_sends_the_catalog_and_a_read_skill_the_framework_can_call(skills_dir):
    client = RecordingClient()
    provider = SkillContextProvider(skills=[skills_dir], mode="hybrid")
    agent = Agent(client=client, context_providers=[provider])
    run(agent, "What is 2+2?")
    assert "## Available skills" in sent(client)
    assert "sql-helper" in sent(client)
    assert "## hello-extended" not in sent(client)
    assert sorted(client.tools[-1]) == ["read_skill", "read_skills"]

    read_skill = provider._tools["read_skill"]
    result = asyncio.run(read_skill.invoke(arguments={"name": "hello-extended"}))
    assert "Multi-language greetings" in "".join(c.text or "" for c in result)


def test_a_stored_preference_reaches_the_model_and_its_use_is_counted(db):
    memory = ctxkit.Memory(db, "/src/shop")
    pnpm = memory.add("Always use pnpm, never npm, for installing packages", category="preference", importance=0.9)
    client = RecordingClient()
    agent = Agent(client=client, context_providers=[MemoryContextProvider(db=db, project="/src/shop")])
    run(agent, "install lodash")
    assert "Always use pnpm, never npm" in sent(client)
    assert next(m for m in memory.list() if m["id"] == pnpm)["access_count"] == 1


def test_remember_in_a_run_is_stored_after_it(db):
    client = RecordingClient()
    agent = Agent(client=client, context_providers=[MemoryContextProvider(db=db, project="/src/shop")])
    run(agent, "remember that we deploy from the main branch only")
    stored = [m["content"] for m in ctxkit.Memory(db, "/src/shop").list()]
    assert any("deploy from the main branch only" in c for c in stored)


def test_both_providers_together(skills_dir, db):
    ctxkit.Memory(db, "/src/shop").add("Greetings to customers are always formal", category="convention")
    client = RecordingClient()
    agent = Agent(
        client=client,
        context_providers=[
            SkillContextProvider(skills=[skills_dir], max_skills=1),
            MemoryContextProvider(db=db, project="/src/shop"),
        ],
    )
    run(agent, "Say bonjour to the customers")
    assert "## hello-extended" in sent(client)
    assert "Greetings to customers are always formal" in sent(client)


def test_a_failed_bookkeeping_never_fails_the_reply(db, caplog):
    provider = MemoryContextProvider(db=db, project="/src/shop")

    class Failing:
        """A memory whose run end fails, as a server gone away would."""

        def __init__(self, inner):
            self.inner = inner

        def invoking(self, *args):
            return self.inner.invoking(*args)

        def run_finished(self, *args):
            raise ctxkit.CtxkitError("memory database postgres://***@db/m failed: connection reset")

    provider.memory = Failing(provider.memory)
    agent = Agent(client=RecordingClient(), context_providers=[provider])
    reply = run(agent, "install lodash")
    assert reply.text == "Done."
    assert "the end of the run was not recorded" in caplog.text
