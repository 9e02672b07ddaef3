"""The folders' layering, checked by test/check_layers.py (issue #46): on the
real tree, and on small trees each planted with one fault it must find."""
import os
import shutil
import subprocess
import sys
import tempfile

from harness import REPO, Failure, run, tail

CHECKER = os.path.join(REPO, "test", "check_layers.py")

# A tree that keeps every rule: util/ below engine/, calls going down.
CLEAN = {
    "util/tiny.h": "int tiny_count(void);\n",
    "util/tiny.c": '#include "util/tiny.h"\nint tiny_count(void) { return 1; }\n',
    "engine/top.h": "int top_run(void);\n",
    "engine/top.c": '#include "util/tiny.h"\n#include "engine/top.h"\n'
                    "int top_run(void) { return tiny_count(); }\n",
}


def check_tree(files):
    """Builds FILES (path -> text) as a small engine library in a temp
    directory and runs the checker on it -> (exit status, output)."""
    root = tempfile.mkdtemp(prefix="layers.")
    try:
        objects = []
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        for path in files:
            if path.endswith(".c"):
                obj = os.path.join(root, os.path.basename(path)[:-2] + ".o")
                cc = subprocess.run(["cc", "-c", "-I", root, "-o", obj, os.path.join(root, path)],
                                    capture_output=True, text=True)
                if cc.returncode != 0:
                    raise Failure(f"cannot compile the planted {path}", tail(cc.stderr))
                objects.append(obj)
        lib = os.path.join(root, "librocksort.a")
        subprocess.run(["ar", "rcs", lib] + objects, check=True)
        result = run([sys.executable, CHECKER, root, "--lib", lib])
        return result.returncode, result.stdout.decode(errors="replace")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def expect_found(files, words):
    status, out = check_tree(files)
    if status == 0 or not all(w in out for w in words):
        raise Failure(f"the checker exited {status} without naming {words}", tail(out))


def test_layers_real_tree(case):
    """The real tree: calls and includes go down the folders, no circle, every
    export prefixed and declared in its own header."""
    result = run([sys.executable, CHECKER, REPO])
    if result.returncode != 0:
        raise Failure("the layering is broken", tail(result.stdout.decode(errors="replace"), 12))


def test_layers_clean_tree_passes(case):
    """The planted trees below differ from this one by one fault each."""
    status, out = check_tree(CLEAN)
    if status != 0:
        raise Failure("a clean tree fails the checker", tail(out))


def test_layers_upward_include_found(case):
    files = dict(CLEAN)
    files["util/tiny.c"] = '#include "util/tiny.h"\n#include "engine/top.h"\n' \
                           "int tiny_count(void) { return 1; }\n"
    expect_found(files, ["util/tiny.c includes engine/top.h", "upward"])


def test_layers_upward_call_found(case):
    """A call up through a declaration written by hand: no include shows it,
    the symbol tables do."""
    files = dict(CLEAN)
    files["engine/top.c"] = '#include "engine/top.h"\nint top_run(void) { return 2; }\n'
    files["util/tiny.c"] = '#include "util/tiny.h"\nint top_run(void);\n' \
                           "int tiny_count(void) { return top_run(); }\n"
    expect_found(files, ["util/tiny calls top_run() of engine/top", "upward"])


def with_private_header(files):
    """FILES, with util/tiny.c using a private header of util/."""
    files = dict(files)
    files["util/tiny_internal.h"] = "struct tiny_state { int count; };\n"
    files["util/tiny.c"] = '#include "util/tiny.h"\n#include "util/tiny_internal.h"\n' \
                           "int tiny_count(void) { struct tiny_state s = { 1 }; return s.count; }\n"
    return files


def test_layers_private_header_in_its_folder_passes(case):
    status, out = check_tree(with_private_header(CLEAN))
    if status != 0:
        raise Failure("a private header included from its own folder fails the checker", tail(out))


def test_layers_private_header_from_another_folder_found(case):
    """A private header (NAME_internal.h) of a lower folder, included from
    above: the include goes down, but the header is its folder's alone."""
    files = with_private_header(CLEAN)
    files["engine/top.c"] = '#include "util/tiny.h"\n#include "util/tiny_internal.h"\n' \
                            '#include "engine/top.h"\nint top_run(void) { return tiny_count(); }\n'
    expect_found(files, ["engine/top.c includes util/tiny_internal.h", "private header"])


def test_layers_unprefixed_export_found(case):
    files = dict(CLEAN)
    files["util/tiny.h"] = "int tiny_count(void);\nint load(void);\n"
    files["util/tiny.c"] = '#include "util/tiny.h"\nint tiny_count(void) { return 1; }\n' \
                           "int load(void) { return 3; }\n"
    expect_found(files, ["util/tiny exports load", "prefix"])


def test_layers_circle_in_a_folder_found(case):
    files = dict(CLEAN)
    files["util/other.h"] = "int other_value(void);\n"
    files["util/other.c"] = '#include "util/other.h"\n#include "util/tiny.h"\n' \
                            "int other_value(void) { return tiny_count(); }\n"
    files["util/tiny.c"] = '#include "util/tiny.h"\n#include "util/other.h"\n' \
                           "int tiny_count(void) { return 1; }\nint tiny_more(void) { return other_value(); }\n"
    files["util/tiny.h"] = "int tiny_count(void);\nint tiny_more(void);\n"
    expect_found(files, ["circle:", "util/other", "util/tiny"])


def test_layers_declared_elsewhere_found(case):
    files = dict(CLEAN)
    files["engine/top.h"] = "int top_run(void);\nint tiny_extra(void);\n"
    files["util/tiny.c"] = '#include "util/tiny.h"\nint tiny_count(void) { return 1; }\n' \
                           "int tiny_extra(void) { return 4; }\n"
    expect_found(files, ["tiny_extra() is declared in engine/top.h"])


def test_layers_mention_in_a_comment_declares_nothing(case):
    """A function's own header that names it only in a comment (as a
    contract's prose does) does not declare it."""
    files = dict(CLEAN)
    files["util/tiny.h"] = "/* tiny_extra() is declared in engine/top.h */\nint tiny_count(void);\n"
    files["engine/top.h"] = "int top_run(void);\nint tiny_extra(void);\n"
    files["util/tiny.c"] = '#include "util/tiny.h"\nint tiny_count(void) { return 1; }\n' \
                           "int tiny_extra(void) { return 4; }\n"
    expect_found(files, ["tiny_extra() is declared in engine/top.h"])


def test_layers_stray_file_found(case):
    files = dict(CLEAN)
    files["misc/odd.c"] = "int odd_one(void) { return 5; }\n"
    files["misc/odd.h"] = "int odd_one(void);\n"
    expect_found(files, ["misc/: sources outside the layers' folders"])
