"""Odd SAM text, parsed as samtools 1.24 parses it.  Registered by
test/run_tests.py.

rocksort must read SAM with the htslib samtools 1.24 is built on: every
difference between htslib releases in how a file is parsed (a U base, an
empty @CO line, an @SQ without LN) becomes a difference in the sorted output.
Each test writes one small SAM file, sorts it with the oracle and with
rocksort in both orders, and requires the same outcome: the same header and
records when the oracle succeeds, or, when it refuses the file, exit status 1,
one line on stderr naming the input, no output and no temporary data.

To run only these:  run_tests.py -k parse_
"""

import os

HD = "@HD\tVN:1.6\tSO:unsorted"
SQ = "@SQ\tSN:c1\tLN:5000"


def record(name, flag=0, rname="c1", pos=100, seq="ACGTACGTAC", qual="IIIIIIIIII",
           cigar=None, tags=()):
    cigar = cigar or (f"{len(seq)}M" if seq != "*" and rname != "*" else "*")
    fields = [name, str(flag), rname, str(pos), "30" if rname != "*" else "0", cigar,
              "*", "0", "0", seq, qual, *tags]
    return "\t".join(fields)


def reads(n=6, unplaced=False, **kw):
    """A few records at falling positions, so that the sort moves them;
    unplaced: unmapped records with no reference."""
    if unplaced:
        return [record(f"r{n - i}", flag=4, rname="*", pos=0, **kw) for i in range(n)]
    return [record(f"r{i}", pos=1000 - 100 * i, **kw) for i in range(n)]


# name -> SAM text.  Headers and records that htslib validates, or that one
# htslib release parses differently from another.
CASES = {
    "u_base": [HD, SQ, *reads(seq="ACGUUGCAUN")],
    "lowercase_and_iupac_bases": [HD, SQ, *reads(seq="acgtRYKMSW")],
    "equals_base": [HD, SQ, *reads(seq="ACG=TACGTA")],
    "empty_co_lines": [HD, SQ, "@CO", "@CO\t", "@CO\ttext", *reads()],
    "co_with_tabs": [HD, SQ, "@CO\ta\tb\t\tc", *reads()],
    "sq_without_ln": [HD, "@SQ\tSN:c1", *reads()],
    "sq_ln_zero": [HD, "@SQ\tSN:c1\tLN:0", *reads(unplaced=True)],
    "sq_ln_not_a_number": [HD, "@SQ\tSN:c1\tLN:abc", *reads()],
    "sq_ln_negative": [HD, "@SQ\tSN:c1\tLN:-5", *reads()],
    "sq_ln_past_2g": [HD, "@SQ\tSN:c1\tLN:3000000000", *reads()],
    "sq_without_sn": [HD, "@SQ\tLN:5000", *reads(unplaced=True)],
    "sq_duplicate_sn": [HD, SQ, "@SQ\tSN:c1\tLN:6000", *reads()],
    "sq_bad_tag_syntax": [HD, "@SQ\tSNc1\tLN:5000", *reads(unplaced=True)],
    "hd_not_first": [SQ, HD, *reads()],
    "hd_without_vn": ["@HD\tSO:unsorted", SQ, *reads()],
    "rg_without_id": [HD, SQ, "@RG\tSM:s1", *reads()],
    "rg_duplicate_id": [HD, SQ, "@RG\tID:g\tSM:a", "@RG\tID:g\tSM:b",
                        *reads(tags=["RG:Z:g"])],
    "unknown_header_type": [HD, SQ, "@XY\tAB:cd", *reads()],
    "header_line_lowercase_type": [HD, SQ, "@co\tlowercase", *reads()],
    "record_unknown_rname": [HD, SQ, *reads(rname="c9")],
    "record_qual_length_mismatch": [HD, SQ, *reads(qual="III")],
    "record_cigar_length_mismatch": [HD, SQ, *reads(cigar="5M")],
    "record_negative_pos": [HD, SQ, *reads()[:3], record("neg", pos=-5)],
    "record_too_few_fields": [HD, SQ, *reads()[:3], "short\t0\tc1\t5"],
    "crlf_line_ends": [HD, SQ, *reads()],
}
CRLF = {"crlf_line_ends"}


def register(test, h):
    Failure = h.Failure

    def write_case(case, name):
        path = os.path.join(case.dir, f"{name}.sam")
        end = "\r\n" if name in CRLF else "\n"
        h.write_text(path, end.join(CASES[name]) + end)
        return path

    def make(name):
        def run(case):
            src = write_case(case, name)
            for order, tag in (([], "coord"), (["-n"], "name")):
                h.expect_outcome_of(case, src, order, name=tag)
        run.__name__ = f"test_parse_{name}"
        return run

    for name in CASES:
        test(make(name))

    @test
    def test_parse_refusals_are_real(case):
        """The header cases that samtools 1.24 refuses stay refused: if the
        oracle changed its mind, the refusal tests above would prove nothing."""
        for name in ("sq_without_ln", "sq_ln_not_a_number"):
            src = write_case(case, name)
            oracle = case.session.oracle("sort", ["-o", case.out("x.bam"), src])
            if oracle.returncode == 0:
                raise Failure(f"samtools 1.24 now accepts {name}")
