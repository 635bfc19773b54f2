"""An agentskills.io `SkillProvider` whose every answer comes from `ctxkit mcp`, through the
official MCP Python SDK and the Skills extension (SEP-2640): `skills/list`, `skills/get` and
`resources/read`. It adds nothing of its own: ids and names go into `skill://` URIs as they
are (percent-encoded as a URI path), and whatever the server refuses is refused.

Each call opens its own session, so the provider holds no state between calls and any number
of calls may overlap.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from agentskills_core import (
    RESOURCE_KINDS,
    AgentSkillsError,
    ResourceNotFoundError,
    SkillNotFoundError,
    SkillProvider,
)
from agentskills_core.parsing import split_frontmatter
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

#: JSON-RPC error codes: unknown params (SEP-2640's "no such skill") and MCP's unknown resource.
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
_JSON = TypeAdapter(dict[str, Any])


class CtxkitMcpProvider(SkillProvider):
    """The skills of `ctxkit mcp --skills ROOT`, as the MCP client sees them."""

    supports_resource_listing = True
    supports_discovery = True
    supports_file_access = True

    def __init__(self, binary: str, skills: Path, work: Path) -> None:
        self._params = StdioServerParameters(
            command=os.path.abspath(binary),
            args=["mcp", "--skills", str(skills), "--memory", str(work / "memory.db"),
                  "--project", str(work), "--watch", "0"],
            env={
                "CTXKIT_CACHE_DIR": str(work / "cache"),
                "CTXKIT_CONFIG": str(work / "config.toml"),
                "HOME": str(work),
                "PATH": os.environ.get("PATH", ""),
            },
            cwd=str(work),
        )

    async def _ask(self, ask) -> Any:
        """`ask(session)` in a session of its own; an error answer is returned, not raised,
        so it leaves the SDK's task group as it is rather than wrapped in an exception group."""
        async with stdio_client(self._params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                try:
                    return await ask(session)
                except MCPError as e:
                    return e

    async def _call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        request = types.Request[dict[str, Any] | None, str](method=method, params=params)
        return await self._ask(lambda session: session.send_request(request, _JSON))

    async def entries(self) -> list[dict[str, Any]]:
        """Every `skills/list` entry."""
        result = await self._call("skills/list")
        if isinstance(result, MCPError):
            raise AgentSkillsError(str(result)) from result
        return result["skills"]

    async def entry(self, skill_id: str) -> dict[str, Any]:
        """The `skills/get` entry of one skill."""
        result = await self._call("skills/get", {"uri": self._uri(skill_id, "SKILL.md")})
        if isinstance(result, MCPError):
            if result.error.code == INVALID_PARAMS:
                raise SkillNotFoundError(f"ctxkit serves no skill {skill_id!r}") from result
            raise AgentSkillsError(str(result)) from result
        return result["skill"]

    @staticmethod
    def _uri(skill_id: str, path: str) -> str:
        return f"skill://{skill_id}/{quote(path, safe='/')}"

    async def read_file(self, skill_id: str, path: str) -> bytes:
        result = await self._ask(lambda session: session.read_resource(self._uri(skill_id, path)))
        if isinstance(result, MCPError):
            if result.error.code == RESOURCE_NOT_FOUND:
                raise ResourceNotFoundError(f"{skill_id!r} has no file {path!r}") from result
            raise AgentSkillsError(str(result)) from result
        contents = result.contents[0]
        if isinstance(contents, types.TextResourceContents):
            return contents.text.encode("utf-8")
        return base64.b64decode(contents.blob)

    async def list_files(self, skill_id: str) -> list[str]:
        prefix = f"skill://{skill_id}/"
        entry = await self.entry(skill_id)
        return sorted(unquote(r["uri"].removeprefix(prefix)) for r in entry["resources"])

    async def get_metadata(self, skill_id: str) -> dict[str, Any]:
        return (await self.entry(skill_id))["frontmatter"]

    async def get_body(self, skill_id: str) -> str:
        try:
            text = (await self.read_file(skill_id, "SKILL.md")).decode("utf-8")
        except ResourceNotFoundError as e:
            raise SkillNotFoundError(f"ctxkit serves no skill {skill_id!r}") from e
        return split_frontmatter(text)[1]

    async def get_reference(self, skill_id: str, name: str) -> bytes:
        return await self.read_file(skill_id, f"references/{name}")

    async def get_script(self, skill_id: str, name: str) -> bytes:
        return await self.read_file(skill_id, f"scripts/{name}")

    async def get_asset(self, skill_id: str, name: str) -> bytes:
        return await self.read_file(skill_id, f"assets/{name}")

    async def list_resources(self, skill_id: str) -> dict[str, list[str]]:
        listing: dict[str, list[str]] = {kind: [] for kind in RESOURCE_KINDS}
        for path in await self.list_files(skill_id):
            kind, _, name = path.partition("/")
            if kind in listing and name:
                listing[kind].append(name)
        return {kind: sorted(names) for kind, names in listing.items()}

    async def discover(self) -> list[str]:
        return sorted(e["frontmatter"]["name"] for e in await self.entries())
