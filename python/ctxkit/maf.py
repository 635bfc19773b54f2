"""ctxkit's skills and memory as Microsoft Agent Framework context providers.

Both are subclasses of ``agent_framework.ContextProvider`` that hand the run's messages to the
compiled core and add what it returns with ``context.extend_instructions``::

    from agent_framework import Agent
    from ctxkit.maf import MemoryContextProvider, SkillContextProvider

    agent = Agent(
        client=client,
        instructions="You are a helpful assistant.",
        context_providers=[
            SkillContextProvider(skills=["./skills"]),
            MemoryContextProvider(db="memory.db", project="/path/to/project"),
        ],
    )

Requires ``agent-framework-core`` (``pip install ctxkit[maf]``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from os import PathLike
from typing import Any

try:
    from agent_framework import ContextProvider, FunctionTool
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ctxkit.maf needs Microsoft Agent Framework; install it with `pip install ctxkit[maf]` "
        "(agent-framework-core)"
    ) from e

from ._native import Memory, Skills, Tool

__all__ = ["MemoryContextProvider", "SkillContextProvider"]

_log = logging.getLogger("ctxkit")


def _pairs(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """The run's messages as ``(role, text)`` pairs, the form the core reads."""
    pairs = []
    for message in messages:
        role = str(getattr(message.role, "value", message.role))
        if role in ("user", "assistant", "system"):
            pairs.append((role, message.text or ""))
    return pairs


def _function_tool(tool: Tool) -> FunctionTool:
    """A ctxkit tool as the framework's tool: same name, description and argument schema."""

    def call(**arguments: Any) -> str:
        return tool.call(json.dumps(arguments))

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        func=call,
        input_model=json.loads(tool.parameters_json),
    )


class SkillContextProvider(ContextProvider):
    """Adds the bodies of the skills whose triggers the user's message holds.

    ``skills`` are folders holding ``SKILL.md`` files (or a loaded :class:`ctxkit.Skills`);
    ``max_skills`` caps the skills selected by their triggers; ``mode`` is ``triggered`` (the
    bodies of the selected skills only), ``hybrid`` (those, plus a catalog of every skill and
    the ``read_skill`` / ``read_skills`` tools to read the rest), ``on-demand`` (the catalog and
    the tools only) or ``full`` (every body, the baseline).
    """

    DEFAULT_SOURCE_ID = "ctxkit-skills"

    def __init__(
        self,
        skills: Sequence[str | PathLike[str]] | Skills,
        *,
        max_skills: int = 3,
        mode: str = "triggered",
        source_id: str = DEFAULT_SOURCE_ID,
    ) -> None:
        super().__init__(source_id)
        self.skills = skills if isinstance(skills, Skills) else Skills(list(skills), max_skills, mode)
        # The catalog's tools are the same on every run: built for the framework once.
        self._tools: dict[str, FunctionTool] = {}

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        # Matching takes microseconds and reads no file: no thread hand-off.
        contribution = self.skills.context_for(_pairs(context.input_messages))
        text = contribution.text
        if text:
            context.extend_instructions(self.source_id, text)
        tools = contribution.tools
        if tools:
            for tool in tools:
                if tool.name not in self._tools:
                    self._tools[tool.name] = _function_tool(tool)
            context.extend_tools(self.source_id, [self._tools[t.name] for t in tools])


class MemoryContextProvider(ContextProvider):
    """Adds the project memories relevant to the user's message, and after the run counts
    their use, carries out "remember …" / "forget …" and records the run as an episode.

    ``db`` is a SQLite file (created when missing) or a ``postgres://`` URL; ``project`` scopes
    the memories (a repository's path, say). The database work runs on a worker thread, so
    the event loop is never blocked. A failure at the end of a run is logged, never raised:
    a good reply is not failed by its bookkeeping.
    """

    DEFAULT_SOURCE_ID = "ctxkit-memory"

    def __init__(
        self,
        db: str | None = None,
        project: str | None = None,
        *,
        memory: Memory | None = None,
        source_id: str = DEFAULT_SOURCE_ID,
    ) -> None:
        super().__init__(source_id)
        if memory is None:
            if db is None or project is None:
                raise TypeError("MemoryContextProvider needs db and project, or memory")
            memory = Memory(db, project)
        self.memory = memory

    def _key(self) -> str:
        return f"{self.source_id}.invocation"

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        thread = getattr(session, "session_id", None) or context.session_id or ""
        invocation = await asyncio.to_thread(self.memory.invoking, _pairs(context.input_messages), thread)
        # Per run, never persisted with the session: the same context reaches after_run.
        context.metadata[self._key()] = invocation
        text = invocation.text
        if text:
            context.extend_instructions(self.source_id, text)

    async def after_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        invocation = context.metadata.pop(self._key(), None)
        if invocation is None:
            return
        reply = context.response.text if context.response is not None else ""
        try:
            await asyncio.to_thread(self.memory.run_finished, invocation, reply or "")
        except Exception as e:  # noqa: BLE001 - the run succeeded; its bookkeeping may not
            _log.warning("ctxkit memory: the end of the run was not recorded: %s", e)
