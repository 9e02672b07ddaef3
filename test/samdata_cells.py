"""Synthetic single-cell inputs for --split (test/samdata.py registers them
by name): read groups and cell barcodes (CB) as a single-cell pipeline
writes them, with the records a split must send elsewhere.

As everywhere in the generator, nothing here says what to expect: the
tests compare with samtools 1.24's sort, then split (the oracle).
"""

from samdata_orders import TEMPLATE_CIGARS, TEMPLATE_REFS, cigar_query_length, molecule_id
from samgen import header, read, sam_line

# Two read groups with records, one with none (split still writes its
# file), and records of a group the header lacks, of none, and with an
# integer RG (split reads it as its decimal text).
CELL_BULK_GROUPS = ["@RG\tID:g1\tSM:donorA\tLB:lib1", "@RG\tID:g2\tSM:donorB\tLB:lib2",
                    "@RG\tID:g3\tSM:donorC\tLB:lib3", "@RG\tID:7\tSM:numbered\tLB:lib7"]
CELL_BULK_RGS = ["Z:g1"] * 5 + ["Z:g2"] * 4 + ["Z:gX", None, "i:7"]


def barcode(rng, i):
    """A 10x-style barcode: 16 bases and a suffix, some sharing a prefix."""
    bases = "".join(rng.choice("ACGT") for _ in range(16))
    return f"{bases}-{1 + i % 2}"


def cell_bulk(rng, count=20000, cells=300):
    """Pairs of one cell each (mates agree on CB), at random places on two
    references, with MC tags for --template-coordinate; one pair in ten
    without a CB, and now and then an empty one."""
    barcodes = [barcode(rng, i) for i in range(cells)] + [""]
    refs = [name for name, _ in TEMPLATE_REFS]
    out = []
    for i in range(count):
        rg = rng.choice(CELL_BULK_RGS)
        cb = None if rng.random() < 0.1 else rng.choice(barcodes)
        tags = ([f"RG:{rg}"] if rg else []) + ([f"CB:Z:{cb}"] if cb is not None else [])
        mi = molecule_id(rng)
        if mi is not None:
            tags.append(f"MI:Z:{mi}")
        ends = [(rng.choice(refs), rng.randint(20, 190000), rng.choice(TEMPLATE_CIGARS),
                 rng.random() < 0.5) for _ in range(2)]
        name = f"cell{i}" if i % 5 else f"cell{rng.randint(0, 100)}"
        for k in range(2):
            (rname, pos, cigar, rev), mate = ends[k], ends[1 - k]
            flag = 0x1 | (0x40 if k == 0 else 0x80) | (0x10 if rev else 0) | (0x20 if mate[3] else 0)
            out.append(read(rng, name, flag, rname, pos, length=cigar_query_length(cigar),
                            rnext="=" if mate[0] == rname else mate[0], pnext=mate[1],
                            tags=tags + [f"MC:Z:{mate[2]}"], cigar=cigar))
    rng.shuffle(out)
    return header(TEMPLATE_REFS, extra=CELL_BULK_GROUPS) + "".join(out)


def many_cells_text(cells, refs=(("c1", 1_000_000),)):
    """`cells` distinct CB values, two records each, and some records
    without a CB: the input whose split makes one file per cell (the
    100,000 cells of issue #54's acceptance)."""
    lines = [header(list(refs))]
    for i in range(cells):
        for k in range(2):
            pos = 1 + (i * 7 + k * 500_003) % 999_000
            lines.append(sam_line(f"r{i}.{k}", 0, refs[0][0], pos, 60, "20M", "*", 0, 0,
                                  "ACGTACGTACGTACGTACGT", "IIIIIIIIIIIIIIIIIIII",
                                  tags=[f"CB:Z:C{i:06d}"]))
    for i in range(50):
        lines.append(sam_line(f"none{i}", 4, "*", 0, 0, "*", "*", 0, 0, "ACGT", "IIII"))
    return "".join(lines)
