"""Validate skill folders with the agentskills.io reference validator (PyPI agentskills-tools),
one process for all of them: each folder named on a line of stdin, one JSON line out per folder,
{"path", "ok", "errors"}. Used by cli/tests/cli/spec.rs to compare verdicts with
`ctxkit skills validate --spec`; the CLI's own `agentskills validate` reads a folder of skills
only one level deep, and the corpus nests some."""

import asyncio
import json
import sys
from pathlib import Path

from agentskills_tools.discovery import discover
from agentskills_tools.validate import validate_location


async def main() -> None:
    for line in sys.stdin:
        folder = Path(line.rstrip("\n"))
        root, [location] = discover(folder)
        report = await validate_location(root, location)
        errors = [f.message for f in report.findings if f.severity == "error"]
        print(json.dumps({"path": str(folder), "ok": not errors, "errors": errors}))


asyncio.run(main())
