"""Type stubs of the compiled core (``ctxkit._native``)."""

from os import PathLike
from typing import Any, Sequence

__version__: str

class CtxkitError(RuntimeError):
    """A ctxkit operation failed; the message says why in one sentence."""

Pair = tuple[str, str]
"""A message as ``(role, text)``; role is ``user``, ``assistant``, ``system`` or ``tool``."""

class Skills:
    """The skills found under some folders, matched against messages by their triggers.

    Loading reads every ``SKILL.md`` once (the GIL is released meanwhile); matching is one pass
    over the message, whatever the number of skills. Safe to share between threads.

    Only the first 100,000 characters of each message are read. ``mode``: ``triggered`` (the selected skills' bodies), ``hybrid`` (those plus a catalog of
    every skill and the ``read_skill`` / ``read_skills`` tools), ``on-demand`` (the catalog and
    tools only) or ``full`` (every body). Raises ``FileNotFoundError`` for a folder that does
    not exist and ``ValueError`` for an unknown mode.
    """

    def __init__(
        self,
        paths: Sequence[str | PathLike[str]],
        max_skills: int = 3,
        mode: str = "triggered",
    ) -> None: ...
    def match(self, message: str) -> list[str]:
        """The names of the skills ``message`` selects, in the order they are injected."""
    def explain(self, message: str) -> list[dict[str, Any]]:
        """Why each skill is selected: ``name``, ``reason`` (``triggered``, ``explicit``,
        ``always``, ``detected``, ``lexical``, ``semantic``) and the ``triggers`` that fired
        (``"greet (as greeted)"`` for an inflected form)."""
    def context(self, message: str) -> str:
        """The text injected for ``message`` (with the catalog in ``hybrid`` and ``on-demand``
        modes); ``""`` when there is nothing to add."""
    def context_for(self, messages: Sequence[Pair]) -> SkillContext:
        """What the provider contributes to a conversation: what a framework's provider calls."""
    def reload(self) -> None:
        """Read the folders again after skills were added, changed or removed."""
    def diagnostics(self) -> list[str]:
        """What the last load found wrong in the skill files, one line each, naming the file."""
    def skills(self) -> list[dict[str, Any]]:
        """Every loaded skill: ``name``, ``description``, ``path`` and literal ``triggers``."""
    def __len__(self) -> int: ...

class SkillContext:
    """What the skills provider contributes to one run."""

    @property
    def text(self) -> str | None:
        """The system text to add (stable parts first, then per-message ones), or ``None``."""
    @property
    def tools(self) -> list[Tool]:
        """The tools that come with it (``read_skill`` and ``read_skills`` with a catalog)."""

class Tool:
    """A tool the model may call; ``read_skill`` loads a skill by name, never by path."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters_json(self) -> str:
        """The JSON schema of the arguments, as JSON text."""
    def call(self, arguments_json: str) -> str:
        """Run the tool on a JSON object of arguments; a refusal raises ``CtxkitError``."""

class Invocation:
    """What the memory provider contributed to one run, from ``invoking`` to
    ``run_finished``."""

    @property
    def text(self) -> str | None:
        """The text injected, or ``None`` when no memory was relevant."""

class Memory:
    """The memories of one project in a SQLite file (created when missing) or on a
    PostgreSQL server (``postgres://`` URL). Calls that touch the database release the GIL.

    A memory that looks like a secret is refused with ``ValueError`` whose message names the
    rule, never the secret; a missing id raises ``KeyError``; other failures ``CtxkitError``.
    """

    def __init__(self, db: str, project: str) -> None: ...
    @property
    def project(self) -> str: ...
    def add(self, content: str, category: str = "fact", importance: float = 0.5) -> str:
        """Store a memory and return its id. ``category``: ``preference``, ``convention``,
        ``pattern``, ``correction`` or ``fact``; ``importance`` from 0.0 to 1.0."""
    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The memories most relevant to ``query``, best first, each with its ``score``. Each
        result's access is counted (its recency refreshed), as ``ctxkit memory search`` does."""
    def list(self, limit: int = 100) -> list[dict[str, Any]]:
        """The project's memories, newest first."""
    def delete(self, id: str) -> None:
        """Delete the memory ``id`` of this project; ``KeyError`` when there is none."""
    def invoking(self, messages: Sequence[Pair], thread_id: str = "") -> Invocation:
        """The memory context for a run's messages (the provider's ``invoking``)."""
    def run_finished(self, invocation: Invocation, reply: str) -> None:
        """The end of that run: counts the access of what was injected, carries out
        "remember …" / "forget …" in the user's message and records an episode."""
