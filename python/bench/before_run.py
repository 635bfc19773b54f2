"""before_run over a corpus of skills: ctxkit's provider against the design record's loop.

    python python/bench/before_run.py ../shared/corpora

Both are Microsoft Agent Framework context providers given the same skills and the same 2 KB
messages (one whose words fire no trigger, one that fires some), called as the agent calls
them: a fresh SessionContext per call, the coroutine driven to completion. The baseline is
the record's algorithm in pure Python: for each skill, for each trigger, `trigger in message`
(lowercased), then the bodies of the first `max_skills` skills that fired added as
instructions. (It knows no whole words or inflections, so it does less than ctxkit.)
"""

import statistics
import sys
import time
from pathlib import Path

from agent_framework import ContextProvider, Message, SessionContext

import ctxkit
from ctxkit.maf import SkillContextProvider

FILLER = (
    "We are planning the next iteration of the billing service. The team wants the invoice "
    "totals to be recalculated when a customer changes plan in the middle of a cycle, and the "
    "numbers must match what the finance dashboard shows at the end of the month. "
)


def message(hit: bool) -> str:
    text = FILLER * (2048 // len(FILLER) + 1)
    if hit:
        text = "Plan the cobol migration and write the migration report. " + text
    return text[:2048]


class AdrLoopProvider(ContextProvider):
    """The design record's provider: every trigger of every skill searched in the message."""

    def __init__(self, skills: list[dict], max_skills: int = 3):
        super().__init__("adr-loop")
        self.max_skills = max_skills
        self.skills = [
            (s["name"], [t.lower() for t in s["triggers"]], Path(s["path"]).read_text(errors="replace"))
            for s in skills
        ]

    async def before_run(self, *, agent, session, context, state):
        text = " ".join(m.text for m in context.input_messages if m.role == "user").lower()
        fired = []
        for name, triggers, body in self.skills:
            for trigger in triggers:
                if trigger in text:
                    fired.append(f"## {name}\n{body}")
                    break
        if fired:
            context.extend_instructions(self.source_id, "\n\n".join(fired[: self.max_skills]))


def call(provider: ContextProvider, text: str) -> SessionContext:
    context = SessionContext(input_messages=[Message(role="user", contents=[text])])
    coroutine = provider.before_run(agent=None, session=None, context=context, state={})
    try:
        coroutine.send(None)
    except StopIteration:
        pass
    return context


def per_call_us(provider: ContextProvider, text: str, calls: int = 2000, rounds: int = 7) -> float:
    for _ in range(200):
        call(provider, text)
    medians = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call(provider, text)
        medians.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(medians)


def main() -> None:
    corpus = sys.argv[1] if len(sys.argv) > 1 else "../shared/corpora"
    skills = ctxkit.Skills([corpus], max_skills=3)
    ours = SkillContextProvider(skills)
    baseline = AdrLoopProvider(skills.skills())
    triggers = sum(len(s["triggers"]) for s in skills.skills())
    floor = per_call_us(ContextProvider("empty"), message(False))
    print(f"{len(skills)} skills, {triggers} literal triggers, 2 KB messages; µs per before_run (median of 7 rounds)")
    print(f"  an empty provider (the call and the SessionContext alone): {floor:.1f}")
    for hit in (False, True):
        text = message(hit)
        a, b = per_call_us(ours, text), per_call_us(baseline, text)
        picked = call(ours, text).instructions
        print(
            f"  {'hit ' if hit else 'miss'}: ctxkit {a:.1f}, ADR loop {b:.1f} ({b / a:.1f}x);"
            f" ctxkit selected {skills.match(text)}, {len(picked[0]) if picked else 0} characters"
        )


if __name__ == "__main__":
    main()
