"""agentskills.io's provider conformance suite (PyPI `agentskills-testing`) against `ctxkit mcp`,
through the MCP client adapter in skills_provider.py, and the official MCP Python SDK reading
every skill of the OpenHands corpus: the frontmatter as written and every file byte-exact.

Run by `cargo test -p ctxkit-cli --test cli mcp_external` with the venv `.ci/run` makes
(Python >= 3.12, tests/mcp/requirements-skills.txt):
`CTXKIT_BIN=target/debug/ctxkit target/mcp-suites/py312/bin/python -m pytest tests/mcp/test_skills_conformance.py`.
"""

import hashlib
import os
from pathlib import Path

import pytest
from agentskills_core.parsing import split_frontmatter
from agentskills_testing import ProviderConformanceSuite, fixtures  # noqa: F401
from agentskills_testing.conformance import (
    ASSET_BYTES, ASSET_NAME, REFERENCE_BYTES, REFERENCE_NAME, SCRIPT_BYTES, SCRIPT_NAME, SKILL_ID,
)

from skills_provider import CtxkitMcpProvider

BINARY = os.environ["CTXKIT_BIN"]
CORPUS = Path(os.environ.get("CTXKIT_CORPORA", Path(__file__).parents[2] / "../shared/corpora"))
OPENHANDS = CORPUS / "openhands-extensions/skills"


class TestCtxkitMcp(ProviderConformanceSuite):
    @pytest.fixture
    def provider(self, tmp_path):
        skill = tmp_path / "skills" / SKILL_ID
        for folder, name, data in [("references", REFERENCE_NAME, REFERENCE_BYTES),
                                   ("scripts", SCRIPT_NAME, SCRIPT_BYTES),
                                   ("assets", ASSET_NAME, ASSET_BYTES)]:
            (skill / folder).mkdir(parents=True)
            (skill / folder / name).write_bytes(data)
        (skill / "SKILL.md").write_text(
            f"---\nname: {SKILL_ID}\ndescription: Checks that a provider keeps its contract.\n---\n"
            "# Conformance\n\nRead references/notes.md, then run scripts/run.sh.\n")
        return CtxkitMcpProvider(BINARY, tmp_path / "skills", tmp_path)


@pytest.mark.asyncio
async def test_every_openhands_skill_travels_as_written(tmp_path):
    if not OPENHANDS.is_dir():
        pytest.skip(f"the OpenHands corpus is not at {OPENHANDS}; .ci/run has it beside the repository")
    provider = CtxkitMcpProvider(BINARY, OPENHANDS, tmp_path)
    folders = sorted(p.parent for p in OPENHANDS.glob("*/SKILL.md"))
    entries = {e["frontmatter"]["name"]: e for e in await provider.entries()}
    assert len(entries) == len(folders) == 59, (len(entries), len(folders))
    for folder in folders:
        raw = (folder / "SKILL.md").read_bytes()
        frontmatter, _ = split_frontmatter(raw.decode("utf-8"))
        entry = entries[frontmatter["name"]]
        assert entry["frontmatter"] == frontmatter, folder.name
        on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                         if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))
        skill_id = entry["uri"].removeprefix("skill://").removesuffix("/SKILL.md")
        assert await provider.list_files(skill_id) == on_disk, folder.name
        digests = {r["uri"]: (r["digest"], r["size"]) for r in entry["resources"]}
        for path in on_disk:
            data = (folder / path).read_bytes()
            assert await provider.read_file(skill_id, path) == data, f"{folder.name}/{path}"
            assert digests[provider._uri(skill_id, path)] == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
