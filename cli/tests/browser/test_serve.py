"""`ctxkit serve` in a real browser: Debian's Chromium driven by Playwright through the page's
accessible names, as a screen reader or a keyboard user reaches them.

Run by `cli/tests/cli/browser.rs` (which `.ci/run` makes required) with:
  CTXKIT_BIN       the ctxkit binary under test
  CTXKIT_CHROMIUM  the browser (default /usr/bin/chromium)
  CTXKIT_SHOTS     optional: a folder to save a screenshot of each page into (the README's)

What a user relies on, checked against the CLI rather than the page: a switch persists
(`ctxkit skills match`), a memory added, deleted and undone is in the store or not
(`ctxkit memory list`). And what must never happen: a request to another host, a console
error, a secret shown, a write from another site accepted.
"""

import http.server
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlparse

from playwright.sync_api import expect, sync_playwright

BIN = os.environ["CTXKIT_BIN"]
CHROMIUM = os.environ.get("CTXKIT_CHROMIUM", "/usr/bin/chromium")
SHOTS = os.environ.get("CTXKIT_SHOTS")
# GitHub's token shape: the secret rules refuse it.
SECRET = "ghp_" + "0123456789abcdefghijklmnopqrstuvwxyzAB"[:36]
# The flags a closed network needs: no background connections, no updates, no sync.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

SKILLS = {
    "greet": "---\nname: greet\ndescription: Greet people in their language\n"
    "triggers: [greet, bonjour]\n---\n# Greeting\n\nSay hello in the person's language.\n",
    "deploy": "---\nname: deploy\ndescription: Ship the service\ntriggers: [deploy, release]\n"
    "---\nRun `./ship.sh` and watch the logs.\n",
    "pdf": "---\nname: pdf\ndescription: Work with PDF files\ntriggers: [pdf]\n---\nUse pdftotext.\n",
}


class Project:
    """A project folder with three skills, and every user folder of ctxkit inside a temp dir."""

    def __init__(self, root: Path):
        self.dir = root / "proj"
        for name, text in SKILLS.items():
            (self.dir / "skills" / name).mkdir(parents=True)
            (self.dir / "skills" / name / "SKILL.md").write_text(text)
        self.env = dict(
            os.environ,
            CTXKIT_CONFIG=str(root / "config.toml"),
            CTXKIT_CACHE_DIR=str(root / "cache"),
            CTXKIT_MEMORY_DB=str(root / "memory.db"),
            HOME=str(root / "home"),
        )
        self.env.pop("CTXKIT_LOG", None)

    def ctxkit(self, *args: str) -> str:
        done = subprocess.run(
            [BIN, *args], cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"ctxkit {args}: {done.stderr}"
        return done.stdout

    def matched(self, message: str) -> str:
        return self.ctxkit("skills", "match", message)

    def memories(self) -> str:
        return self.ctxkit("memory", "list", "--project", "p")

    def serve(self) -> subprocess.Popen:
        return subprocess.Popen(
            [BIN, "serve", "--addr", "127.0.0.1:0", "--project", "p"],
            cwd=self.dir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def other_site(target: str, token: str) -> tuple[http.server.HTTPServer, str]:
    """A page of another site that posts a switch's form to `target`, token included (the
    worst case: a token that leaked), as soon as it loads."""
    page = f"""<!doctype html><title>elsewhere</title>
<form method="post" action="{target}/skills/greet">
<input type="hidden" name="token" value="{token}"><input type="hidden" name="enabled" value="false">
</form><script>document.forms[0].submit()</script>"""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Another name for the same machine: another site to the browser.
    return server, f"http://localhost:{server.server_address[1]}/"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Project(Path(tmp))
        server = project.serve()
        try:
            url = server.stdout.readline().strip()
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), f"first line: {url!r}"
            run(project, url.rstrip("/"))
        finally:
            server.terminate()
            server.wait(timeout=10)
        errors = server.stderr.read()
        assert SECRET not in errors, "the secret reached the server's log"


def run(project: Project, base: str) -> None:
    served = urlparse(base).netloc
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        elsewhere, console = [], []
        page.on(
            "request",
            lambda r: urlparse(r.url).netloc != served and elsewhere.append(r.url),
        )
        page.on("console", lambda m: m.type in ("error", "warning") and console.append(m.text))
        page.on("pageerror", lambda e: console.append(str(e)))

        # Skills: a switch persists, as the CLI sees it.
        page.goto(base + "/")
        expect(page.get_by_role("heading", level=1)).to_contain_text("Skills")
        switch = page.get_by_role("switch", name="greet enabled")
        expect(switch).to_have_attribute("aria-checked", "true")
        assert "greet" in project.matched("say bonjour")
        if SHOTS:
            page.screenshot(path=os.path.join(SHOTS, "serve-skills.png"), full_page=True)
        switch.click()
        expect(page.get_by_role("switch", name="greet enabled")).to_have_attribute(
            "aria-checked", "false"
        )
        assert "greet" not in project.matched("say bonjour"), "the switch did not persist"
        page.get_by_role("switch", name="greet enabled").click()
        expect(page.get_by_role("switch", name="greet enabled")).to_have_attribute(
            "aria-checked", "true"
        )
        assert "greet" in project.matched("say bonjour")

        # Try a message: Enter submits, the region explains.
        box = page.get_by_role("textbox", name="Try a message")
        box.fill("Say bonjour to Alice")
        box.press("Enter")
        region = page.get_by_role("region", name="Would inject")
        expect(region).to_contain_text("greet")
        expect(region).to_contain_text("bonjour")
        expect(region).not_to_contain_text("deploy")
        if SHOTS:
            page.screenshot(path=os.path.join(SHOTS, "serve-try.png"), full_page=True)

        # Memory: add, a secret refused without being shown, search, delete, undo.
        page.get_by_role("link", name="Memory").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Memory")
        new = page.get_by_role("textbox", name="New memory")
        new.fill("Always use pnpm for installing packages")
        page.get_by_role("button", name="Add memory").click()
        expect(page.get_by_role("link", name="Always use pnpm for installing packages")).to_be_visible()
        assert "Always use pnpm" in project.memories()
        page.get_by_role("textbox", name="New memory").fill("Tests live in tests/")
        page.get_by_role("button", name="Add memory").click()

        assert not console, f"console errors: {console}"
        page.get_by_role("textbox", name="New memory").fill(f"the deploy token is {SECRET}")
        page.get_by_role("button", name="Add memory").click()
        expect(page.get_by_role("alert")).to_contain_text("secret")
        # Said on the memory page itself: the list and the form stay, the form empty.
        expect(page.get_by_role("link", name="Always use pnpm for installing packages")).to_be_visible()
        expect(page.get_by_role("textbox", name="New memory")).to_have_value("")
        # The refusal is a 400 answer, which the console reports; nothing else.
        assert all("status of 400" in m for m in console), f"console errors: {console}"
        console.clear()
        assert SECRET not in page.content(), "the refusal showed the secret"
        assert SECRET not in project.memories() and "deploy token" not in project.memories()
        page.get_by_role("link", name="Memory").click()

        search = page.get_by_role("searchbox", name="Search memories")
        search.fill("pnpm")
        search.press("Enter")
        expect(page.get_by_role("link", name="Always use pnpm for installing packages")).to_be_visible()
        expect(page.get_by_role("link", name="Tests live in tests/")).to_have_count(0)

        page.get_by_role("link", name="Memory").click()
        if SHOTS:
            page.screenshot(path=os.path.join(SHOTS, "serve-memory.png"), full_page=True)
        row = page.get_by_role("listitem").filter(has_text="Tests live in tests/")
        row.get_by_role("button", name="Delete").click()
        undo = page.get_by_role("button", name="Undo")
        expect(undo).to_be_visible()
        assert "Tests live in tests/" not in project.memories()
        undo.click()
        expect(page.get_by_role("link", name="Tests live in tests/")).to_be_visible()
        assert "Tests live in tests/" in project.memories()

        assert not elsewhere, f"requests to other hosts: {elsewhere}"
        assert not console, f"console errors: {console}"

        # A write replayed from another site, with the real token, is refused.
        token = page.locator("input[name=token]").first.get_attribute("value")
        site, attack = other_site(base, token)
        try:
            attacker = browser.new_page()
            with attacker.expect_response(lambda r: r.url.endswith("/skills/greet")) as answer:
                attacker.goto(attack)
            assert answer.value.status == 403, f"cross-site write answered {answer.value.status}"
        finally:
            site.shutdown()
        assert "greet" in project.matched("say bonjour"), "the cross-site write went through"
        browser.close()


if __name__ == "__main__":
    main()
    print("browser suite passed", file=sys.stderr)
