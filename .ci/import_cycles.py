#!/usr/bin/env python3
"""Fail when two modules of a crate import each other, directly or around a loop.

Each `.rs` file under a crate's `src/` is a module. A module depends on another when it names
it in a path (`crate::a::b`, `super::b`, or a child module declared with `mod b;` and used as
`b::…` other than in a `pub use` re-export). Test modules (`#[cfg(test)] mod tests`, inline or in
a file of their own) and comments are ignored; inside an inline `mod x { … }` block, `super` is the file's own module.

Three checks:
- between modules that are not each other's ancestors, no cycle at all;
- a child that uses what one of its ancestors defines while that ancestor (or a module it
  reaches) uses the child is a child → parent loop. Each is reported; the ones kept are listed
  in `KEPT` with the reason, and any other fails;
- a crate whose docs draw its layers (a "# Layering" section in `lib.rs` with a `text` block:
  module names on the left, what they do on the right) names every top-level module in it, and
  each module uses only modules on lower lines, so the drawing stays true.

Usage: .ci/import_cycles.py [WORKSPACE_ROOT]
"""

import os
import re
import sys

PATH = re.compile(r"(?<![\w:])(crate|super|self)((?:::(?:\w+|\{[^;]*?\}))+)", re.S)


def crates(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("target", "node_modules") and not d.startswith(".")]
        if "Cargo.toml" in files and os.path.isdir(os.path.join(folder, "src")):
            yield os.path.join(folder, "src")


def module_of(src, path):
    parts = os.path.relpath(path, src)[:-3].split(os.sep)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def block_end(text, j):
    """Where the `{ … }` block whose body starts at `j` ends."""
    depth = 1
    while j < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        j += 1
    return j


def strip(text):
    """The text without comments and `#[cfg(test)]` modules; in other inline modules, `super`
    written as `self` (it names the file's module)."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        i = block_end(text, m.end())
        if not m.group(1):
            out.append(re.sub(r"(?<![\w:])super::", "self::", text[m.start():i]))
    out.append(text[i:])
    return "".join(out)


def leaves(rest):
    """The paths a `::a::{b, c::d}` tail names, as lists of segments."""
    rest = rest.strip().lstrip(":")
    if rest.startswith("{"):
        inner, depth, part, found = rest[1:-1], 0, "", []
        for ch in inner + ",":
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                if part.strip():
                    found += leaves("::" + part.strip())
                part = ""
            else:
                part += ch
        return found
    head, _, tail = rest.partition("::")
    head = head.split(" as ")[0].strip()
    if not tail:
        return [[head]]
    return [[head] + l for l in leaves("::" + tail)]


def edges_of(src):
    files = [os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs")]
    mods = {module_of(src, f): f for f in files}
    # Test modules in files of their own (`#[cfg(test)] mod tests;`) are left out too.
    tests = {
        m + (child,)
        for m, f in mods.items()
        for child in re.findall(r"#\[cfg\(test\)\]\s*mod\s+(\w+)\s*;", open(f, encoding="utf-8").read())
    }
    mods = {m: f for m, f in mods.items() if not any(m[: len(t)] == t for t in tests)}
    edges = {m: set() for m in mods}
    for m, f in mods.items():
        text = strip(open(f, encoding="utf-8").read())
        for found in PATH.finditer(text):
            base = {"crate": [], "super": list(m[:-1]), "self": list(m)}[found.group(1)]
            for leaf in leaves(found.group(2)):
                path = base + [s for s in leaf if s]
                while "super" in path:
                    k = path.index("super")
                    path = path[: max(k - 1, 0)] + path[k + 1 :]
                target = next((tuple(path[:k]) for k in range(len(path), -1, -1) if tuple(path[:k]) in mods), None)
                if target is not None and target != m:
                    edges[m].add(target)
        used = re.sub(r"^\s*pub(?:\([^)]*\))?\s+use\s[^;]*;", "", text, flags=re.M)
        for child in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text, re.M):
            if m + (child,) in mods and re.search(r"(?<![\w:])" + child + r"::", used):
                edges[m].add(m + (child,))
    return edges


def is_ancestor(a, m):
    return len(a) < len(m) and m[: len(a)] == a


def without_ancestors(edges):
    return {m: {n for n in out if not is_ancestor(n, m)} for m, out in edges.items()}


def child_parent_loops(edges):
    """Each (child, ancestor) edge that closes a loop: the ancestor reaches the child back."""
    loops = []
    for component in cycles(edges):
        inside = set(component)
        for m in component:
            loops += [(m, a) for a in edges[m] if a in inside and is_ancestor(a, m)]
    return sorted(loops)


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10_000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in edges:
        if v not in index:
            visit(v)
    return found


def layers(src):
    """Each top-level module's row in the crate's layer table (0 at the top), or None."""
    lib = os.path.join(src, "lib.rs")
    if not os.path.exists(lib):
        return None
    found = re.search(r"//! # Layering.*?//! ```text\n(.*?)//! ```", open(lib, encoding="utf-8").read(), re.S)
    if not found:
        return None
    rows, row, column = {}, -1, None
    for line in found.group(1).splitlines():
        body = line[4:] if line.startswith("//! ") else ""
        if column is None:
            gap = re.search(r"\S\s{2,}\S", body)
            column = gap.end() - 1 if gap else len(body)
        names = body[:column]
        if not names.startswith(" "):
            row += 1
        for name in re.findall(r"\w+", names):
            rows[name] = row
    return rows


def layer_problems(src, edges):
    """Modules missing from the layer table, and uses of a module on the same or a higher row."""
    rows = layers(src)
    if rows is None:
        return []
    top = {m[0] for m in edges if m}
    problems = [f"{m} is not in the layer table of lib.rs" for m in sorted(top - set(rows))]
    problems += [f"the layer table names {m}, which is no module" for m in sorted(set(rows) - top)]
    uses = {(m[0], n[0]) for m, out in edges.items() for n in out if m and n and m[0] != n[0]}
    for m, n in sorted(uses):
        if m in rows and n in rows and rows[n] <= rows[m]:
            problems.append(f"{m} uses {n}, which the layer table draws on {'the same line' if rows[n] == rows[m] else 'a higher line'}")
    return problems


SQLITE = (
    "a backend is one type, `MemoryDb`, with its connection and helpers in `sqlite/mod.rs` and "
    "its methods split by concern over the child files (`impl MemoryDb` in each)"
)
POSTGRES = (
    "a backend is one type, `PostgresStore`, with its pool and transaction helpers "
    "(`read_tx`, `write_tx`) in `postgres/mod.rs` and its methods split by concern over the "
    "child files"
)

# Child → parent loops kept, by crate folder, with why.
KEPT = {
    "providers/skills/src": {
        ("matcher::patterns", "matcher"): "the pattern half of the matcher names a trigger by the "
        "matcher's own id for it (`TriggerRef`), which both halves share",
        ("parse::foreign", "parse"): "Cursor and Copilot files are read by the same `Parser` "
        "(its diagnostics, its YAML reading) as SKILL.md; foreign formats extend it",
    },
    "providers/memory/src": {
        ("eval::baseline", "eval"): "the baseline ranks the evaluation's own records "
        "(`EvalMemory`); it exists only as a part of the evaluation",
        **{
            (f"sqlite::{child}", "sqlite"): SQLITE
            for child in ["index", "rows", "search", "sketches", "writer"]
        },
        **{
            (f"postgres::{child}", "postgres"): POSTGRES
            for child in ["search", "write", "writer"]
        },
    },
}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    failed = False
    for src in crates(root):
        crate = os.path.relpath(src, root)
        edges = edges_of(src)
        for component in cycles(without_ancestors(edges)):
            failed = True
            names = ", ".join(sorted("::".join(c) or "crate root" for c in component))
            print(f"{crate}: modules import each other: {names}")
        for problem in layer_problems(src, edges):
            failed = True
            print(f"{crate}: {problem}")
        for child, parent in child_parent_loops(edges):
            pair = ("::".join(child), "::".join(parent) or "crate root")
            why = KEPT.get(crate, {}).get(pair)
            if why is None:
                failed = True
                print(f"{crate}: {pair[0]} uses its parent {pair[1]}, which uses it: move what both use to a module of its own, or explain it in KEPT")
            else:
                print(f"{crate}: kept child → parent loop {pair[0]} → {pair[1]}: {why}")
    if failed:
        sys.exit(1)
    print("no import cycles")


if __name__ == "__main__":
    main()
