"""--template-coordinate's refusals, against samtools 1.24: a record whose
MC, CB or MI tag is not a string (Z or H), or a paired record with a placed
mate and no MC.  1.24 checks MC, then CB, then MI, fails with exit status 1
and one line naming the tag; rocksort must fail the same way, with one line
that names the file and the same tag, and leave no output and no temporary
data, also when runs were already written.  To run only these:
    run_tests.py -k 'template_error_*'
"""

import os

from harness import SPILL, Failure, each, expect_error, tail, write_text
from samdata import dataset_text

# (name, the tags to set on one record (TAG: TYPE:VALUE, or None to drop
# it), the tag both messages must name)
BAD_RECORDS = [
    ("cb_integer", {"CB": "i:5"}, "CB"),
    ("cb_character", {"CB": "A:x"}, "CB"),
    ("cb_float", {"CB": "f:1.5"}, "CB"),
    ("cb_array", {"CB": "B:c,1,2"}, "CB"),
    ("mi_integer", {"MI": "i:3"}, "MI"),
    ("mc_integer", {"MC": "i:3"}, "MC"),
    ("mc_missing", {"MC": None}, "MC"),
    ("cb_before_mi", {"CB": "i:5", "MI": "i:3"}, "CB"),
    ("mc_before_cb", {"MC": None, "CB": "i:5"}, "MC"),
]


def with_bad_record(text, at, changes):
    """text with the record at fraction `at` of the records (a pair with a
    placed mate, as every templates_cells record is) given `changes`."""
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if not line.startswith("@"))
    index = min(first + int((len(lines) - first) * at), len(lines) - 1)
    fields = lines[index].rstrip("\n").split("\t")
    tags = {f[:2]: f for f in fields[11:]}
    for tag, value in changes.items():
        tags[tag] = f"{tag}:{value}" if value else None
    fields = fields[:11] + [t for t in tags.values() if t]
    lines[index] = "\t".join(fields) + "\n"
    return "".join(lines)


def expect_refused_like_oracle(case, src, tag, extra=()):
    """The oracle refuses src naming `tag`; rocksort refuses it in one line
    naming the file and `tag`, with no output and no temporary data."""
    out = case.out("out.bam")
    oracle = case.session.oracle("sort", ["--template-coordinate", "-o", out, src])
    if oracle.returncode != 1 or f"{tag} tag" not in oracle.stderr.decode(errors="replace"):
        raise Failure(f"test is wrong: the oracle's outcome (exit status {oracle.returncode}) "
                      f"does not name {tag}", tail(oracle.stderr))
    if os.path.exists(out):
        raise Failure("test is wrong: the oracle failed yet wrote output")
    result = case.rocksort(["--template-coordinate", *extra, "-T", case.temp_prefix,
                            "-o", out, src])
    line = expect_error(case, result, [os.path.basename(src)], out)
    if f"{tag} tag" not in line:
        raise Failure(f"the error does not name the {tag} tag", [line])


@each((f"template_error_{name}", changes, tag) for name, changes, tag in BAD_RECORDS)
def test_template_error(case, changes, tag):
    src = os.path.join(case.dir, "bad.sam")
    write_text(src, with_bad_record(dataset_text("templates_cells"), 0.5, changes))
    expect_refused_like_oracle(case, src, tag)


def test_template_error_cb_integer_spilled(case):
    """The wrongly typed CB in the last record, after many runs were
    written on two threads: the runs must go too."""
    src = os.path.join(case.dir, "bad.sam")
    write_text(src, with_bad_record(dataset_text("templates_bulk"), 1.0, {"CB": "i:5"}))
    expect_refused_like_oracle(case, src, "CB", extra=[*SPILL, "-@", "2"])


def test_template_mate_reference_star_has_one_order(case):
    """A read whose mate is flagged mapped but has RNEXT * (its mate's
    reference -1) beside an unmapped read: 1.24 compares reference ids by
    subtraction, which overflows between -1 and an unmapped read's INT32_MAX,
    so its order of these three records follows their input order (the
    man page's DIFFERENCES).  rocksort gives one order for every input
    order, -1 first, as 1.24's key means it."""
    header = "@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:1000\n"
    records = ["c\t0\tchr1\t1\t60\t4M\t*\t0\t0\t*\t*\n",
               "a\t99\tchr1\t340\t29\t20M\t*\t0\t0\t*\t*\tMC:Z:20M\n",
               "b\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\n"]
    oracle_orders = set()
    for perm in ((0, 1, 2), (1, 0, 2), (1, 2, 0), (2, 1, 0)):
        src = os.path.join(case.dir, "star.sam")
        write_text(src, header + "".join(records[i] for i in perm))
        out = case.out("out.sam")
        case.session.oracle_ok("sort", ["--template-coordinate", "-O", "sam", "-o", out, src])
        with open(out) as f:
            oracle_orders.add(tuple(l.split("\t")[0] for l in f if not l.startswith("@")))
        result = case.rocksort(["--template-coordinate", "-O", "sam", "-o", out, src])
        if result.returncode != 0:
            raise Failure(f"exit status {result.returncode}", tail(result.stderr))
        with open(out) as f:
            got = tuple(l.split("\t")[0] for l in f if not l.startswith("@"))
        if got != ("a", "c", "b"):
            raise Failure(f"input order {perm}: {got}, expected a c b")
    if len(oracle_orders) < 2:
        raise Failure("test is wrong: samtools 1.24 gave one order, so it should be compared "
                      "with", sorted(oracle_orders))
