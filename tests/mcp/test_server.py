"""The official MCP Python SDK drives `ctxkit mcp` over stdio.

Run by `.ci/run` (and by `cargo test -p ctxkit-cli --test mcp_external` when it finds the
venv): `CTXKIT_BIN=target/debug/ctxkit python tests/mcp/test_server.py`. Needs `mcp` pinned in
tests/mcp/requirements.txt; everything it touches lives in a temporary folder.
"""

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SECRET = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
SKILL = """---
name: deploy
description: Ship the service
triggers: [deploy, release]
user-invocable: true
---
Run ./ship.sh and watch the logs.
"""


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "text", None))


async def check(binary: str, root: Path) -> None:
    skills = root / "skills" / "deploy"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(SKILL)
    (root / "outside.txt").write_text("TOP SECRET FILE")
    env = {
        "CTXKIT_CACHE_DIR": str(root / "cache"),
        "CTXKIT_CONFIG": str(root / "config.toml"),
        "PATH": os.environ.get("PATH", ""),
    }
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--skills", str(root / "skills"), "--memory", str(root / "memory.db"),
              "--project", "/repo", "--watch", "0"],
        env=env,
        cwd=str(root),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "ctxkit", init

            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"match_skills", "list_skills", "read_skill", "add_memory",
                                  "search_memories", "list_memories", "delete_memory"}, tools
            assert tools["read_skill"].annotations.read_only_hint is True
            assert tools["delete_memory"].annotations.destructive_hint is True

            matched = await session.call_tool("match_skills", {"message": "please deploy it"})
            assert not matched.is_error, matched
            skill = matched.structured_content["skills"][0]
            assert skill["name"] == "deploy" and skill["triggers"] == ["deploy"], skill
            assert "ship.sh" in skill["body"]

            read = await session.call_tool("read_skill", {"name": "deploy"})
            assert read.structured_content["body"].startswith("Run ./ship.sh"), read

            for name in ["../outside.txt", str(root / "outside.txt"), "deploy/../../outside.txt"]:
                attempt = await session.call_tool("read_skill", {"name": name})
                assert attempt.is_error, attempt
                assert "TOP SECRET" not in text_of(attempt)

            refused = await session.call_tool("add_memory", {"content": f"the token is {SECRET}"})
            assert refused.is_error, refused
            assert "secrets are never stored" in text_of(refused)
            assert SECRET[:10] not in text_of(refused)

            added = await session.call_tool(
                "add_memory", {"content": "Always use pnpm, not npm", "category": "preference"})
            assert not added.is_error, text_of(added)
            memory_id = added.structured_content["id"]
            found = await session.call_tool("search_memories", {"query": "pnpm or npm?"})
            assert found.structured_content["memories"][0]["id"] == memory_id, found
            deleted = await session.call_tool("delete_memory", {"id": memory_id})
            assert not deleted.is_error, deleted
            listed = await session.call_tool("list_memories", {})
            assert listed.structured_content["memories"] == [], listed

            resources = (await session.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["skill://deploy/SKILL.md"], resources
            contents = (await session.read_resource("skill://deploy/SKILL.md")).contents
            assert contents[0].text == SKILL, "the file as written"

            prompts = (await session.list_prompts()).prompts
            assert [p.name for p in prompts] == ["deploy"], prompts
            prompt = await session.get_prompt("deploy", {"request": "ship v2"})
            assert "ship v2" in prompt.messages[0].content.text, prompt


def main() -> int:
    binary = os.path.abspath(os.environ.get("CTXKIT_BIN") or str(
        Path(__file__).resolve().parents[2] / "target" / "debug" / "ctxkit"))
    with tempfile.TemporaryDirectory() as root:
        asyncio.run(check(binary, Path(root)))
    print("python mcp suite: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
