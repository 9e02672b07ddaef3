#!/usr/bin/env python3
"""Checks that calls go down: the project's modules include each other
without a cycle.

A module is a C file with its header (NAME.c, NAME.cc, NAME.h), and its
private header NAME_internal.h if it has one.  Module A depends on module
B when any of A's files includes one of B's headers.  A cycle means
some lower layer reaches back up into a caller, which is what issue #34
removed (the engine's job_fail() called from below, the store seeing the
command line).  Only the project's own files count: test/ and fuzz/ sit
above everything and are left out.

It also checks that only the engine sees the command line and the job:
no module outside ENGINE includes rocksort_opts.h, sort_job.h or
sort_pipeline.h.

Usage: check_layers.py [REPO]   -- prints what is wrong and exits 1 if anything is.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)
INTERNAL = "_internal"
# The command-line front end, the engine and its phases (sort_job.h).
ENGINE = {"bamtk", "bam_rocksort", "rocksort_opts", "sort_pipeline", "sort_job", "sort_load",
          "sort_plan", "sort_output", "sort_report", "sort_resume", "resume_progress",
          "resume_fate"}
ENGINE_ONLY = {"rocksort_opts", "sort_job", "sort_pipeline"}


def module_of(stem):
    return stem[:-len(INTERNAL)] if stem.endswith(INTERNAL) else stem


def modules(repo):
    """-> {module: set of modules it includes}"""
    deps = {}
    for name in sorted(os.listdir(repo)):
        stem, ext = os.path.splitext(name)
        if ext not in (".c", ".h", ".cc"):
            continue
        with open(os.path.join(repo, name), errors="replace") as f:
            text = f.read()
        module = module_of(stem)
        found = {module_of(os.path.basename(m)) for m in INCLUDE.findall(text)}
        deps.setdefault(module, set()).update(found - {module})
    return {m: {d for d in ds if d in deps} for m, ds in deps.items()}


def cycles(deps):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def engine_leaks(deps):
    """Modules below the engine that include an engine-only header."""
    return [(m, sorted(deps[m] & ENGINE_ONLY)) for m in sorted(deps)
            if m not in ENGINE and deps[m] & ENGINE_ONLY]


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    deps = modules(repo)
    found = cycles(deps)
    for group in found:
        edges = [f"{a} -> {b}" for a in group for b in sorted(deps[a]) if b in group]
        print("include cycle: " + ", ".join(edges))
    leaks = engine_leaks(deps)
    for module, headers in leaks:
        print(f"{module} is below the engine but includes {', '.join(headers)}")
    return 1 if found or leaks else 0


if __name__ == "__main__":
    sys.exit(main())
