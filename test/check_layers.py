#!/usr/bin/env python3
"""Checks that calls go down through the folders, and that every exported
name says which module it belongs to.

The engine's sources live in one folder per layer, lowest first:

    util  disk  keys  codec  resume  store  load  output  readout  engine  cli  (top level)

A module is a C file with its header (NAME.c or NAME.cc, NAME.h) and its
private header NAME_internal.h if it has one, named by its path without the
extension (store/store_run).  The checks:

1. Includes.  A file includes only headers of its own folder or of a folder
   below it; the top level (bamtk.c) may include any.  A private header
   (NAME_internal.h) is included only by files of its own folder, the top
   level's too.
2. Calls.  The engine library's symbol tables (`nm`) say which module
   defines each global symbol and which modules use it: a module uses only
   modules of its own folder or below.  Unlike includes, this sees a call
   made through a declaration written by hand.
3. Circles.  Modules depend on each other (by include or by call) without a
   circle, except the circles listed in ALLOWED_CYCLES, each named in
   doc/DESIGN.md.
4. Prefixes.  Every global symbol a module defines starts with its module's
   prefix: its file name and an underscore (fd_budget_available), or the
   file name itself (legacy_form), or a prefix PREFIXES registers for it.
5. Declarations.  Every function a module exports is declared in that
   module's own header, not in another's.

Usage: check_layers.py [REPO] [--lib LIBRARY]
LIBRARY is the engine's static library (default: REPO/librocksort.a, else
REPO/build/asan/librocksort.a); it must be built.  Prints what is wrong and
exits 1 if anything is.  test/ and fuzz/ sit above everything and are left
out.
"""
import os
import re
import subprocess
import sys

LAYERS = ["util", "disk", "keys", "codec", "resume", "store", "load", "output", "readout", "engine", "cli", ""]
SOURCE_EXT = (".c", ".cc", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
INTERNAL = "_internal"

# Modules whose exports carry a prefix other than their file name: none.
# A new entry needs a reason no rename can remove.
PREFIXES = {}

# Circles allowed inside one folder, each with the DESIGN section that names
# it.  None across folders: the include and call rules forbid those.
ALLOWED_CYCLES = {}


def layer_of(path):
    folder = os.path.dirname(path)
    return folder if folder in LAYERS else None


def rank(path):
    return LAYERS.index(layer_of(path))


def module_of(path):
    stem = os.path.splitext(path)[0]
    return stem[:-len(INTERNAL)] if stem.endswith(INTERNAL) else stem


# Folders of the repository that are not the engine's.
OUTSIDE = {"test", "fuzz", "bench", "htslib", "build", "doc", "example", "scripts", "workflow"}


def strays(repo):
    """Folders holding C sources that are neither a layer nor OUTSIDE."""
    found = []
    for name in sorted(os.listdir(repo)):
        full = os.path.join(repo, name)
        if name.startswith(".") or name in OUTSIDE or name in LAYERS or not os.path.isdir(full):
            continue
        if any(f.endswith(SOURCE_EXT) for f in os.listdir(full)):
            found.append(name + "/")
    return found


def sources(repo):
    """Every source file of the engine, by its path from REPO."""
    found = []
    for folder in LAYERS:
        base = os.path.join(repo, folder) if folder else repo
        if not os.path.isdir(base):
            continue
        for name in sorted(os.listdir(base)):
            if name.endswith(SOURCE_EXT) and os.path.isfile(os.path.join(base, name)):
                found.append(os.path.join(folder, name) if folder else name)
    return found


def read(repo, path):
    with open(os.path.join(repo, path), errors="replace") as f:
        return f.read()


# A comment, or a string or character literal (kept, so that "/*" in one
# does not open a comment).
COMMENT_OR_LITERAL = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)


def code_of(text):
    """TEXT without its comments (each left as a space, its newlines kept):
    a header that mentions a function in a comment does not declare it."""
    def blank(m):
        s = m.group(0)
        return s if s[0] in "\"'" else " " + "\n" * s.count("\n")
    return COMMENT_OR_LITERAL.sub(blank, text)


def includes(repo, files):
    """-> [(file, included path)] for the project's own headers."""
    known = set(files)
    out = []
    for path in files:
        for name in INCLUDE.findall(code_of(read(repo, path))):
            if name in known:
                out.append((path, name))
            elif os.path.basename(name) in {os.path.basename(k) for k in known} and "/" not in name \
                    and os.path.join(os.path.dirname(path), name) not in known:
                out.append((path, "?" + name))
    return out


def private(header):
    return os.path.splitext(header)[0].endswith(INTERNAL)


def check_includes(edges):
    problems = []
    for src, header in edges:
        if header.startswith("?"):
            problems.append(f"{src} includes \"{header[1:]}\": name the header by its path "
                            f"from the top (\"folder/{header[1:]}\")")
        elif private(header) and os.path.dirname(src) != os.path.dirname(header):
            problems.append(f"{src} includes {header}: a private header, for "
                            f"{os.path.dirname(header) or 'the top level'}/ alone")
        elif layer_of(src) != "" and rank(header) > rank(src):
            problems.append(f"{src} includes {header}: upward ({layer_of(src)}/ is below "
                            f"{layer_of(header) or 'the top level'})")
    return problems


def nm(args, lib):
    result = subprocess.run(["nm"] + args + [lib], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"check_layers: nm {' '.join(args)} {lib}: {result.stderr.strip()}")
    return result.stdout


def symbols(lib, files):
    """-> ({symbol: defining module}, {module: set of used symbols}) from the
    library's members, each matched to its source by file name."""
    by_object = {}
    for path in files:
        if path.endswith((".c", ".cc")):
            obj = os.path.splitext(os.path.basename(path))[0] + ".o"
            if obj in by_object:
                raise SystemExit(f"check_layers: two sources make {obj}: {by_object[obj]}, {path}")
            by_object[obj] = module_of(path)
    defined, used = {}, {}
    for args, table in ((["-g", "--defined-only"], defined), (["-u"], used)):
        member = None
        for line in nm(args, lib).splitlines():
            if line.endswith(".o:"):
                member = by_object.get(line[:-1])
                continue
            parts = line.split()
            if not parts or member is None:
                continue
            name = parts[-1]
            if table is defined:
                if name.startswith(("_Z", "DW.ref.")):
                    continue        # C++ internals of temp_env.cc
                table.setdefault(member, set()).add(name)
            else:
                table.setdefault(member, set()).add(name)
    owner = {s: m for m, names in defined.items() for s in names}
    return owner, defined, used


def call_edges(owner, used):
    return {(m, owner[s], s) for m, names in used.items() for s in names
            if s in owner and owner[s] != m}


def check_calls(edges):
    problems = []
    for user, definer, symbol in sorted(edges):
        u, d = layer_of(user + ".c"), layer_of(definer + ".c")
        if u != "" and LAYERS.index(d) > LAYERS.index(u):
            problems.append(f"{user} calls {symbol}() of {definer}: upward ({u}/ is below "
                            f"{d or 'the top level'})")
    return problems


def prefixes(module):
    stem = os.path.basename(module)
    return PREFIXES.get(module, (stem + "_",)), stem


def check_prefixes(defined):
    problems = []
    for module, names in sorted(defined.items()):
        allowed, stem = prefixes(module)
        for name in sorted(names):
            if name != stem and not name.startswith(allowed):
                problems.append(f"{module} exports {name}, without its module's prefix "
                                f"({' or '.join(allowed)})")
    return problems


def check_declarations(repo, files, defined):
    """Each exported function is declared in its own module's header."""
    headers = {p: code_of(read(repo, p)) for p in files if p.endswith(".h")}
    problems = []
    for module, names in sorted(defined.items()):
        own = [p for p in headers if module_of(p) == module]
        for name in sorted(names):
            pattern = re.compile(r"\b" + re.escape(name) + r"\s*\(")
            where = [p for p, text in headers.items() if pattern.search(text)]
            others = [p for p in where if p not in own]
            if others and not any(p in own for p in where):
                problems.append(f"{module}'s {name}() is declared in {', '.join(others)}, "
                                f"not in its own header")
    return problems


def cycles(deps):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(deps.get(v, ())):
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


def check_cycles(include_edges, edges):
    deps, why = {}, {}
    for src, header in include_edges:
        if header.startswith("?"):
            continue
        a, b = module_of(src), module_of(header)
        if a != b:
            deps.setdefault(a, set()).add(b)
            why.setdefault((a, b), f"includes {header}")
    for user, definer, symbol in edges:
        deps.setdefault(user, set()).add(definer)
        why.setdefault((user, definer), f"calls {symbol}()")
    problems = []
    for group in cycles(deps):
        if frozenset(group) in ALLOWED_CYCLES:
            continue
        links = [f"{a} {why[(a, b)]}" for a in group for b in sorted(deps[a]) if b in group]
        problems.append("circle: " + "; ".join(links))
    return problems


def find_library(repo, given):
    for lib in ([given] if given else
                [os.path.join(repo, "librocksort.a"), os.path.join(repo, "build", "asan", "librocksort.a")]):
        if lib and os.path.isfile(lib):
            return lib
    raise SystemExit("check_layers: no engine library: build it first (make librocksort.a)")


def main(argv):
    args = [a for a in argv if not a.startswith("--lib")]
    lib_arg = None
    for i, a in enumerate(argv):
        if a == "--lib" and i + 1 < len(argv):
            lib_arg = argv[i + 1]
            args.remove(lib_arg)
        elif a.startswith("--lib="):
            lib_arg = a.split("=", 1)[1]
    repo = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = sources(repo)
    inc = includes(repo, files)
    owner, defined, used = symbols(find_library(repo, lib_arg), files)
    edges = call_edges(owner, used)
    problems = [f"{p}: sources outside the layers' folders ({', '.join(l for l in LAYERS if l)})"
                for p in strays(repo)]
    problems += check_includes(inc) + check_calls(edges) + check_cycles(inc, edges)
    problems += check_prefixes(defined) + check_declarations(repo, files, defined)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
