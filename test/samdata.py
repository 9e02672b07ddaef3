"""Synthetic SAM inputs for the rocksort end-to-end tests, by name
(SAM_DATASETS, dataset_text()): the coordinate and name orders' here, the
other orders' in test/samdata_orders.py, the building blocks in
test/samgen.py (re-exported, as tests build records with samdata.read()).

Every generator takes a seeded random.Random and returns SAM text, so the
inputs are the same on every run.  The expected sort order is never written
here: the tests always compare with what samtools 1.24 (the oracle) does.
"""

import random

from samdata_cells import cell_bulk
from samdata_orders import cell_templates, minimiser_reads, tagged, templates
from samgen import MIXED_REFS, header, mixed_reference_text, read, sam_line


def varied_tags(rng, i):
    """Aux tags of many types, so byte-identity checks cover all encodings."""
    tags = [f"AS:i:{rng.randint(0, 150)}", f"RG:Z:grp{i % 2}"]
    if i % 3 == 0:
        tags.append(f"XI:i:{rng.choice([-70000, -129, 127, 255, 65535])}")
    if i % 5 == 0:
        tags.append("XU:i:4000000000")
    if i % 7 == 0:
        tags.append(f"XF:f:{rng.choice([1.5, -0.25, 3e-7])}")
    if i % 11 == 0:
        tags.append("XB:B:c,-1,2,3")
        tags.append("XS:B:S,1,65535")
    if i % 13 == 0:
        tags.append("XA:A:x")
        tags.append("XH:H:1AE3")
    return tags



# --- the datasets ---------------------------------------------------------

def mixed(rng):
    """Everything at once: pairs, unmapped mates, secondary/supplementary,
    ties on both strands, aux tags of every type, @RG/@CO/@PG header lines."""
    extra = ["@RG\tID:grp0\tSM:s0", "@RG\tID:grp1\tSM:s1",
             "@PG\tID:aligner\tPN:aligner\tVN:0.1", "@CO\tmade by samdata.py"]
    out = [header(MIXED_REFS, extra=extra)]
    refs = [name for name, _ in MIXED_REFS]
    for i in range(700):
        name = rng.choice([f"pair{i}", f"P:{i % 37}:{i}", f"q{i:04d}"])
        rname = rng.choice(refs)
        pos = rng.randint(1, 19000)
        mpos = min(pos + rng.randint(0, 300), 19000)
        kind = rng.random()
        tags1, tags2 = varied_tags(rng, i), varied_tags(rng, i + 1)
        if kind < 0.6:  # proper pair, opposite strands
            out.append(read(rng, name, 0x63, rname, pos, rnext="=", pnext=mpos,
                            tlen=mpos - pos + 50, tags=tags1))
            out.append(read(rng, name, 0x93, rname, mpos, rnext="=", pnext=pos,
                            tlen=pos - mpos - 50, tags=tags2))
        elif kind < 0.8:  # read2 unmapped, placed at its mate
            out.append(read(rng, name, 0x49, rname, pos, rnext="=", pnext=pos,
                            tags=tags1))
            out.append(read(rng, name, 0x85, rname, pos, rnext="=", pnext=pos,
                            tags=tags2))
        else:  # both unmapped, no position
            out.append(read(rng, name, 0x4D, "*", 0, tags=tags1))
            out.append(read(rng, name, 0x8D, "*", 0, tags=tags2))
        if i % 9 == 0:  # secondary: same name, no SEQ/QUAL
            out.append(sam_line(name, 0x141 | rng.choice([0, 0x10]), rname,
                                rng.randint(1, 19000), 0, "50M", "*", 0, 0,
                                "*", "*", ["AS:i:3"]))
        if i % 10 == 0:  # supplementary with hard clip
            out.append(read(rng, name, 0x841 | rng.choice([0, 0x10]), rname,
                            rng.randint(1, 19000), length=30, cigar="20H30M",
                            tags=["SA:Z:c1,5,+,30M20S,60,0;"]))
    for i in range(120):  # a pile of equal keys on both strands
        out.append(read(rng, f"tie{rng.randint(0, 10**6)}_{i}",
                        rng.choice([0, 0x10]), "c2", 5000, tags=varied_tags(rng, i)))
    body = out[1:]
    rng.shuffle(body)
    return out[0] + "".join(body)


def unmapped(rng):
    """Unmapped reads placed at a mate, unplaced (tid -1, a few with a POS),
    and the odd 'RNAME set, POS 0' case (tid >= 0 but pos -1), mixed with
    mapped reads at the very same positions."""
    refs = [("u1", 5000), ("u2", 5000)]
    out = []
    for i in range(400):
        rname = rng.choice(["u1", "u2"])
        pos = rng.choice([1, 2, 100, 4999, rng.randint(1, 5000)])
        kind = i % 5
        if kind == 0:
            out.append(read(rng, f"m{i}", 0x49 | rng.choice([0, 0x10]), rname, pos,
                            rnext="=", pnext=pos))
            out.append(read(rng, f"m{i}", 0x85, rname, pos, rnext="=", pnext=pos))
        elif kind == 1:
            out.append(read(rng, f"n{i}", 0x4D, "*", 0))
            out.append(read(rng, f"n{i}", 0x8D, "*", 0))
        elif kind == 2:  # unplaced, some keeping a POS: samtools sorts them by it
            out.append(read(rng, f"s{i}", rng.choice([0x4, 0x14]), "*", rng.choice([0, 0, pos])))
        elif kind == 3:
            out.append(read(rng, f"z{i}", 0x4, rname, 0))
        else:
            out.append(read(rng, f"p{i}", rng.choice([0, 0x10]), rname, pos))
    return header(refs) + "".join(out)


def ties(rng):
    """Hundreds of records sharing a few keys, both strands, distinct names
    in an order unrelated to the input order: stability becomes visible.
    Some names repeat with different flags, for the -n tie order."""
    out = []
    for i in range(900):
        pos = rng.choice([10, 10, 10, 11, 500])
        flag = rng.choice([0, 0x10, 0x1 | 0x40, 0x1 | 0x80 | 0x10, 0x100, 0x800])
        name = rng.choice([f"t{rng.randint(0, 99999)}", f"same{i % 7}"])
        out.append(read(rng, name, flag, "tc", pos, length=20,
                        tags=[f"XN:i:{i}"]))
    return header([("tc", 1000)]) + "".join(out)


TRICKY_NAMES = [
    "r", "r0", "r00", "r1", "r01", "r001", "r10", "r2", "r010", "r1a",
    "r01a", "r1b", "r_1", "r-1", "r.1", "r:1:2", "r:1:10", "r:01:2",
    "R1", "a1b2", "a01b2", "a1b02", "a1b", "a1b2c", "a1b10", "ab", "abc",
    "abcd", "ab1", "ab10", "ab01", "0", "00", "000", "1", "01", "123",
    "0123", "123a", "9", "10", "x" + "1" * 35, "x" + "0" * 3 + "1" * 35,
    "x" + "1" * 34 + "2", "x" + "9" * 40, "x" + "1" * 36,
    "1" * 31, "1" * 30 + "0", "2" + "0" * 33, "read#1/1", "read#1/2",
    "read#10/1", "~tilde", "!bang", "a!b", "a~b", "Z", "a", "_", "a_1_2",
    "a_1_10", "q" * 200, "q" * 199 + "1", "SRR1.1", "SRR1.10", "SRR1.2",
    "HWI:1:1101:1000:2000#0", "HWI:1:1101:1000:200#0", "x1y2z3", "x1y2z03",
    # around 2**64, where a number stops fitting a 64-bit integer
    "n18446744073709551615", "n18446744073709551616", "n018446744073709551616",
    "n99999999999999999999", "n" + "0" * 25 + "1", "n1",
    "*", "dup",
    # past 0x7f: compared as unsigned bytes
    "r\u00e91", "r\u00e9", "\u00e9", "r~1",
]
# READ1 and READ2 both set, and secondary with supplementary, rank last.
TRICKY_FLAGS = [0x41, 0x81, 0x51, 0x91, 0x141, 0x841, 0x4, 0x0, 0x10, 0x181, 0xC1, 0x941]


def tricky_read(rng, name, flag, length=10, tags=()):
    mapped = not flag & 0x4
    return read(rng, name, flag, "nc" if mapped else "*",
                rng.randint(1, 900) if mapped else 0, length=length, tags=tags)


def tricky_names(rng):
    """Names that stress natural (-n) order; each in several flag flavours,
    plus one name and flag repeated many times (only input order differs)."""
    out = [tricky_read(rng, name, flag) for name in TRICKY_NAMES
           for flag in rng.sample(TRICKY_FLAGS, rng.randint(1, 5))]
    out += [tricky_read(rng, "dup", rng.choice([0x41, 0x81]), tags=[f"XN:i:{i}"])
            for i in range(30)]
    rng.shuffle(out)
    return header([("nc", 1000)]) + "".join(out)


def tricky_names_bulk(rng, count=30000):
    """Tricky names, varied with zero-padded numbers, in bulk: with -m 1M
    records of equal name land in different sorted runs."""
    out = []
    for i in range(count):
        name = rng.choice(TRICKY_NAMES)
        if rng.random() < 0.5:
            name += "." + str(rng.randint(0, 99)).zfill(rng.randint(1, 4))
        out.append(tricky_read(rng, name, rng.choice(TRICKY_FLAGS), length=100,
                               tags=[f"XN:i:{i}"]))
    return header([("nc", 1000)]) + "".join(out)


def name_shape(rng, names):
    """Each name once or as a pair (with now and then a secondary or
    supplementary record), shuffled, on short reads so that -m 1M spills
    some ten sorted runs."""
    flags = [[0x0], [0x41, 0x81], [0x41, 0x81, 0x141], [0x41, 0x81, 0x841]]
    out = []
    for name in names:
        for flag in rng.choices(flags, weights=[4, 12, 1, 1])[0]:
            out.append(read(rng, name, flag, "c1", rng.randint(1, 90000), length=30))
    rng.shuffle(out)
    return header([("c1", 100000)]) + "".join(out)


def illumina_names(rng, count=12000):
    """Two runs of one instrument (85% and 15%, as in the benchmark): names
    share a long prefix, then lane and tile, then x:y (some with #0)."""
    names = set()
    while len(names) < count:
        run, cell = ("45", "HV3JKDSXY") if rng.random() < 0.85 else ("46", "HV3JKDSXZ")
        name = (f"A00123:{run}:{cell}:{rng.randint(1, 4)}:{rng.choice([1101, 1102, 2101, 2478])}:"
                f"{rng.randint(1000, 32000)}:{rng.randint(1000, 36000)}")
        names.add(name + rng.choice(["", "", "", "#0"]))
    return name_shape(rng, sorted(names))


def sra_names(rng, count=14000):
    """SRA style: one accession, then the spot number, every number from 1
    up (so every digit count), some with .1/.2 suffixes."""
    names = [f"SRR1234567.{i}" for i in range(1, count + 1)]
    names += [f"SRR1234567.{i}.{m}" for i in rng.sample(range(1, count + 1), 300) for m in (1, 2)]
    return name_shape(rng, names)


def uuid_names(rng, count=11000):
    """Nanopore style UUIDs: hexadecimal, so natural order reads their
    digit runs as numbers; a few share a UUID and add a suffix."""
    names = [f"{rng.getrandbits(128):032x}" for _ in range(count)]
    names = [f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}" for u in names]
    names += [f"{names[i]}_{j}" for i in range(0, 200) for j in (1, 2, 10)]
    return name_shape(rng, names)


def no_sq(rng):
    """No @SQ line at all: every read is unmapped and unplaced."""
    out = []
    for i in range(600):
        flag = rng.choice([0x4, 0x4D, 0x8D, 0x4 | 0x200])
        out.append(read(rng, f"u{rng.randint(0, 500)}", flag, "*", 0))
    return header([]) + "".join(out)


def one_sq(rng):
    out = []
    for i in range(1500):
        flag = rng.choice([0, 0x10, 0x4, 0x400])
        rname, pos = ("*", 0) if flag == 0x4 else ("only", rng.randint(1, 10000))
        out.append(read(rng, f"o{rng.randint(0, 2000)}", flag, rname, pos))
    return header([("only", 10050)]) + "".join(out)


def many_sq(rng):
    """5000 references, many of them empty, with some odd but legal names."""
    odd = ["HLA-A*01:01:01:01", "chrUn_KI270302v1", "a|b", "x.y;z", "x=y"]
    refs = [(f"chr{i}", rng.randint(100, 100000)) for i in range(1, 4996)]
    refs += [(name, 5000) for name in odd]
    out = []
    for i in range(12000):
        name, length = rng.choice(refs)
        pos = rng.randint(1, length)
        mate_name, mate_len = rng.choice(refs)
        out.append(read(rng, f"m{i}", rng.choice([0x1, 0x11, 0x31]) | 0x40,
                        name, pos, length=30, rnext=mate_name,
                        pnext=rng.randint(1, mate_len)))
    return header(refs) + "".join(out)


BIG_POS_REFS = [("g1", 6_000_000_000), ("g2", 3_000_000_000), ("g3", 1000)]


def big_positions(rng, count=20000):
    """Positions past 2**31 and 2**32, bunched around the 32-bit edges."""
    edges = [2**31 - 1, 2**31, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 1]
    out = []
    for i in range(count):
        rname, length = rng.choice(BIG_POS_REFS)
        pos = rng.choice(edges) if rng.random() < 0.2 else rng.randint(1, length)
        pos = min(pos, length - 20)
        flag = rng.choice([0, 0x10, 0x4]) if i % 50 else 0x4
        if flag == 0x4 and i % 2:
            rname, pos = "*", 0
        pnext = rng.randint(1, 5_000_000_000)
        out.append(read(rng, f"b{rng.randint(0, count)}", flag, rname, pos,
                        length=20, rnext="g1", pnext=pnext))
    return header(BIG_POS_REFS) + "".join(out)


def long_reads(rng):
    """Reads of 100 kb and more, one with a 70 000-op CIGAR (more than BAM's
    65535, so BAM keeps it in a CG tag) and one with a 254-char name."""
    out = []
    out.append(read(rng, "long120k", 0, "lc", 1000, length=120_000))
    out.append(read(rng, "long150k_rev", 0x10, "lc", 1000, length=150_000))
    ops = "1M1I" * 35_000 + "80000M"
    out.append(read(rng, "manyops", 0, "lc", 1000, length=150_000, cigar=ops))
    out.append(read(rng, "n" * 254, 0, "lc", 1000, length=100_000))
    out.append(read(rng, "unmapped_long", 0x4, "*", 0, length=110_000))
    for i in range(200):
        out.append(read(rng, f"short{rng.randint(0, 300)}", rng.choice([0, 0x10]),
                        "lc", rng.choice([999, 1000, 1001, rng.randint(1, 900000)])))
    rng.shuffle(out)
    return header([("lc", 1_000_000)]) + "".join(out)


def bulk(rng, count=40000):
    """Enough data (about 13 MB of BAM records) to spill a 1M sort buffer
    many times over.  Illumina-like paired names for -n at scale."""
    refs = [("chr1", 5_000_000), ("chr2", 4_000_000), ("chr3", 3_000_000),
            ("chrM", 16569)]
    out = []
    pairs = count // 2
    for i in range(pairs):
        name = (f"HWI-ST1:8:{1101 + i % 16}:{rng.randint(0, 20000)}:"
                f"{rng.randint(0, 200000)}#0" if i % 3 else f"SRR0{i % 100}.{i}")
        rname, length = rng.choice(refs)
        pos = rng.randint(1, length - 500)
        if i % 50 == 0:
            pos = 1234  # a hot spot of ties
            rname = "chr1"
        mpos = pos + rng.randint(0, 400)
        if i % 20 == 0:
            out.append(read(rng, name, 0x4D, "*", 0, length=100))
            out.append(read(rng, name, 0x8D, "*", 0, length=100))
            continue
        out.append(read(rng, name, 0x63, rname, pos, length=100, rnext="=",
                        pnext=mpos, tlen=mpos - pos + 100, tags=[f"NM:i:{i % 4}"]))
        out.append(read(rng, name, 0x93, rname, mpos, length=100, rnext="=",
                        pnext=pos, tlen=pos - mpos - 100, tags=[f"NM:i:{i % 3}"]))
    rng.shuffle(out)
    return header(refs) + "".join(out)


def bulk_then_uniform(rng):
    """Half of bulk, then long reads of a single base and a single quality.
    Those compress far better than the first records, so a size estimated
    from how the start of the file expands falls well short of the whole."""
    out = [bulk(rng, count=20000)]
    for i in range(400):
        out.append(sam_line(f"uniform{i}", rng.choice([0, 0x10]), "chr1",
                            rng.randint(1, 4_900_000), 60, "20000M", "*", 0, 0,
                            "A" * 20000, "I" * 20000))
    return "".join(out)


def prefix_shifts(rng):
    """Runs of records whose keys share a prefix, then records that share
    none: names of one lane on one reference, another lane on another, then
    everything mixed.  Batches share 0-20 key bytes, each batch a different
    number than the last, which is what the sort's inline keys depend on."""
    refs = [("chr1", 5_000_000), ("chr2", 4_000_000), ("chr3", 3_000_000)]
    groups = [("HWI-ST1:8:1101:{}:{}#0", ["chr1"]), ("HWI-ST1:9:2202:{}:{}#0", ["chr2"]),
              (None, ["chr1", "chr2", "chr3"])]
    out = []
    for pattern, names in groups:
        group = []
        for i in range(6000):
            x, y = rng.randint(0, 20000), rng.randint(0, 200000)
            name = (pattern.format(x, y) if pattern
                    else rng.choice(["SRR1.", "HWI-ST1:8:1101:", "ERR2_"]) + f"{x}:{y}")
            group.append(read(rng, name, rng.choice([0x41, 0x81, 0x51]), rng.choice(names),
                              rng.randint(1, 4_000_000), length=100))
        rng.shuffle(group)
        out.extend(group)
    return header(refs) + "".join(out)


def header_only(rng):
    return header(MIXED_REFS, extra=["@RG\tID:grp0\tSM:s0", "@CO\tno reads",
                                     "@PG\tID:p0\tPN:p0"])


def no_hd_line(rng):
    """No @HD line: samtools adds one."""
    return header(MIXED_REFS, hd=None) + "".join(
        read(rng, f"h{rng.randint(0, 99)}", rng.choice([0, 0x10, 0x4]),
             "c1", rng.randint(1, 900)) for _ in range(100))


def hd_with_go_ss(rng):
    """@HD carrying GO and SS tags that sort has to drop or replace."""
    hd = "@HD\tVN:1.4\tSO:queryname\tGO:query\tSS:queryname:lexicographical"
    return header(MIXED_REFS, hd=hd) + "".join(
        read(rng, f"g{rng.randint(0, 99)}", rng.choice([0, 0x10]),
             rng.choice(["c1", "c2"]), rng.randint(1, 900)) for _ in range(100))



# name -> function(rng) giving the file's text; the seed comes from the name
# so that adding a dataset never changes the others.
SAM_DATASETS = {
    "mixed": mixed,
    "unmapped": unmapped,
    "ties": ties,
    "names": tricky_names,
    "names_bulk": tricky_names_bulk,
    "names_illumina": illumina_names,
    "names_sra": sra_names,
    "names_uuid": uuid_names,
    "nosq": no_sq,
    "onesq": one_sq,
    "manysq": many_sq,
    "bigpos": lambda rng: big_positions(rng, count=3000),
    "bigpos_bulk": big_positions,
    "longreads": long_reads,
    "bulk": bulk,
    "bulk_large": lambda rng: bulk(rng, count=160000),
    "header_only": header_only,
    "no_hd": no_hd_line,
    "hd_go_ss": hd_with_go_ss,
    "empty": lambda rng: "",
    "tagged": tagged,
    "tagged_bulk": lambda rng: tagged(rng, count=40000, length=100),
    "templates": templates,
    "templates_bulk": lambda rng: templates(rng, count=20000),
    "templates_cells": cell_templates,
    "minimiser": minimiser_reads,
    "minimiser_unplaced": lambda rng: minimiser_reads(rng, count=600, placed=False),
    "minimiser_bulk": lambda rng: minimiser_reads(rng, count=40000, length=100),
    "bulk_then_uniform": bulk_then_uniform,
    "prefix_shifts": prefix_shifts,
    "cells_bulk": cell_bulk,
}


def dataset_text(name):
    return SAM_DATASETS[name](random.Random(f"rocksort-{name}"))

