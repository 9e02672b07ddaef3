"""Synthetic SAM inputs for samtools sort's other orders: -t TAG,
--template-coordinate and -M (test/samdata.py registers them by name).

As everywhere in the generator, nothing here says what order to expect:
the tests compare with samtools 1.24 (the oracle).
"""

from samgen import (MIXED_REFS, fasta_sequences, header, mixed_reference_text,
                    random_qual, random_seq, read, sam_line)

TAG_REFS = [("t1", 60000), ("t2", 60000)]
TAG_NAMES = ["r1", "r2", "r9", "r10", "r010", "r1a", "R1", "a_5", "a_05",
             "x12y3", "x12y10"]
BARCODES = ["ACGT", "ACGTA", "ACGTT", "AAAA", "TTTTTTTT", "CAGT", "ACG",
            "GATTACA", "acgt", "A-1", "A-10", "A-2", "", "\u00e9-1"]


def int_tag_value(rng):
    """Integers of every BAM size, with many ties and negatives."""
    return rng.choice([rng.randint(0, 40), rng.randint(-5, 5), -70000, -129,
                       -128, 127, 128, 255, 256, 65535, 65536, 2**31 - 1,
                       2**31, 4000000000, 2**32 - 1, -2**31])


def float_tag_value(rng):
    return rng.choice(["-1.5", "-0", "0", "0.25", "1e-07", "3.5", "5",
                       "1e+10", "-1e+10", "inf", "-inf", "2.0000001",
                       str(rng.randint(-3, 3) / 4)])


def mixed_tag(rng, tag="XM"):
    """One tag whose type changes from record to record (None: absent).
    Integers and floats of equal value, strings that are prefixes of each
    other, Z next to H, characters, and arrays."""
    kind = rng.randrange(10)
    if kind == 0:
        return None
    if kind <= 2:
        return f"{tag}:i:{int_tag_value(rng)}"
    if kind == 3:
        return f"{tag}:f:{float_tag_value(rng)}"
    if kind == 4:
        return f"{tag}:Z:{rng.choice(BARCODES + ['5', '1AE3', '1AE'])}"
    if kind == 5:
        return f"{tag}:H:{rng.choice(['1AE3', '1AE301', '00', 'FF', 'AB'])}"
    if kind == 6:
        return f"{tag}:A:{rng.choice('aAz!~5')}"
    if kind == 7:
        return f"{tag}:B:{rng.choice(['c,-1,2', 'S,1,65535', 'f,0.5', 'i,0'])}"
    return f"{tag}:i:{rng.randint(0, 3)}"


def tagged_read(rng, i, length=40):
    """A read with XI (integer), CB (string), XF (float) and XM (mixed)
    tags, each sometimes missing; names and positions repeat so that the
    secondary order (coordinate or name) decides many ties."""
    tags = []
    if rng.random() < 0.85:
        tags.append(f"XI:i:{int_tag_value(rng)}")
    if rng.random() < 0.9:
        tags.append(f"CB:Z:{rng.choice(BARCODES)}")
    if rng.random() < 0.85:
        tags.append(f"XF:f:{float_tag_value(rng)}")
    xm = mixed_tag(rng)
    if xm:
        tags.append(xm)
    rng.shuffle(tags)
    name = rng.choice(TAG_NAMES) + rng.choice(["", f".{rng.randint(0, 30)}"])
    flag = rng.choice([0, 0x10, 0x41, 0x81, 0x51, 0x91, 0x141, 0x841, 0x4])
    if flag & 0x4:
        return read(rng, name, flag, "*", 0, length=length, tags=tags)
    rname, _ = rng.choice(TAG_REFS)
    pos = rng.choice([100, 100, 2000, rng.randint(1, 59000)])
    return read(rng, name, flag, rname, pos, length=length, tags=tags)


def tagged(rng, count=2500, length=40):
    """Input for -t: see tagged_read."""
    out = [tagged_read(rng, i, length) for i in range(count)]
    return header(TAG_REFS) + "".join(out)


TEMPLATE_REFS = [("p1", 200000), ("p2", 200000)]
TEMPLATE_READ_GROUPS = ["@RG\tID:rgA\tLB:libX\tSM:s", "@RG\tID:rgB\tLB:libX\tSM:s",
                        "@RG\tID:rgC\tLB:libY\tSM:s", "@RG\tID:rgD\tSM:s",
                        "@RG\tID:rgE\tLB:lib\tSM:s", "@RG\tID:1AE3\tLB:libHex\tSM:s"]
# RG as records carry it, type included: samtools looks up Z only, so
# H:1AE3 has no library where Z:1AE3 has libHex.
TEMPLATE_RGS = ["Z:rgA", "Z:rgB", "Z:rgC", "Z:rgD", "Z:rgE", "Z:rgZ", "Z:1AE3", "H:1AE3", None]
# Cell barcodes (CB), type included: 10x style, prefixes of each other,
# empty (equal to none), past 0x7f (compared unsigned), hex (H) strings.
CELL_BARCODES = [None, None, None, "Z:AAACCTGA-1", "Z:AAACCTGA-10", "Z:AAACCTGA-2",
                 "Z:AAACCTG", "Z:AAACCTGA", "Z:TTTGGTTC-1", "Z:", "Z:~", "Z:\u00e9-1",
                 "H:1AE3", "H:1AE301"]
TEMPLATE_CIGARS = ["50M", "5S45M", "45M5S", "3H47M", "47M3H", "10S30M10S",
                   "2H3S40M5S", "20M5I25M", "25M3D25M", "20M100N30M", "48M2I"]


def cigar_query_length(cigar):
    n, total = "", 0
    for c in cigar:
        if c.isdigit():
            n += c
        else:
            if c in "MIS=X":
                total += int(n)
            n = ""
    return total


def template_end(rng, refs, hot):
    """(rname, pos, cigar, reverse) of one mapped read."""
    if rng.random() < 0.3:  # many templates share their ends
        rname, pos = hot
    else:
        rname = rng.choice(refs)
        pos = rng.randint(20, 190000)
    return rname, pos, rng.choice(TEMPLATE_CIGARS), rng.random() < 0.5


def molecule_id(rng):
    """An MI value or None: with and without "/A"-style suffixes, and past
    0x7f (samtools compares MI as signed chars)."""
    n = rng.randint(0, 3)
    return rng.choice([None, None, f"{n}", f"{n}/A", f"{n}/B", f"{n}/AB", f"\u00e9{n}/A", "~"])


def template_tags(rng, rg, mi, cb=None):
    """RG and CB as TYPE:VALUE, MI as its value; None: no such tag."""
    tags = [f"RG:{rg}"] if rg else []
    if cb is not None:
        tags.append(f"CB:{cb}")
    if mi is not None:
        tags.append(f"MI:Z:{mi}")
    return tags


def template_pair(rng, name, refs, hot):
    """Two reads of one template, with MC tags as samtools fixmate -m writes
    them; sometimes one or both mates unmapped, or extra secondary and
    supplementary alignments.  None of an end means unmapped."""
    ends = [template_end(rng, refs, hot), template_end(rng, refs, hot)]
    kind = rng.random()
    if kind < 0.12:
        ends[rng.randrange(2)] = None
    elif kind < 0.17:
        ends = [None, None]
    rg, mi, cb = rng.choice(TEMPLATE_RGS), molecule_id(rng), rng.choice(CELL_BARCODES)
    out = []
    for i in range(2):
        me, mate = ends[i], ends[1 - i]
        flag = 0x1 | (0x40 if i == 0 else 0x80)
        if rng.random() < 0.03:     # mates that disagree on their cell
            cb = rng.choice(CELL_BARCODES)
        tags = template_tags(rng, rg, mi, cb)
        if me is None and mate is None:
            out.append(read(rng, name, flag | 0x4 | 0x8, "*", 0, tags=tags))
            continue
        if me is None:  # unmapped, placed at its mate
            flag |= 0x4 | (0x20 if mate[3] else 0)
            tags.append(f"MC:Z:{mate[2]}")
            out.append(read(rng, name, flag, mate[0], mate[1], rnext="=",
                            pnext=mate[1], tags=tags))
            continue
        rname, pos, cigar, rev = me
        flag |= 0x10 if rev else 0
        if mate is None:
            flag |= 0x8
            rnext, pnext = "=", pos
        else:
            flag |= 0x20 if mate[3] else 0
            rnext, pnext = ("=" if mate[0] == rname else mate[0]), mate[1]
            tags.append(f"MC:Z:{mate[2]}")
        out.append(read(rng, name, flag, rname, pos, length=cigar_query_length(cigar),
                        rnext=rnext, pnext=pnext, tags=tags, cigar=cigar))
        if rng.random() < 0.05:  # a secondary / supplementary alignment
            extra = template_end(rng, refs, hot)
            out.append(read(rng, name, flag | rng.choice([0x100, 0x800]), extra[0],
                            extra[1], length=cigar_query_length(extra[2]), rnext=rnext,
                            pnext=pnext, tags=tags, cigar=extra[2]))
    return out


def templates(rng, count=700):
    """Paired reads for --template-coordinate: clipped CIGARs on both
    strands, mates on other references or unmapped, several read groups (two
    sharing a library, one without LB, one not in the header, one as an H
    tag), cell barcodes, MI tags with and without "/A"-style suffixes,
    single-end reads, and many templates with the same ends so that
    library, CB, MI, name and mate order decide."""
    refs = [name for name, _ in TEMPLATE_REFS]
    hot = ("p1", 5000)
    out = []
    for i in range(count):
        name = rng.choice([f"t{i}", f"t{rng.randint(0, 50)}", f"T:{i % 7}:{i}"])
        if rng.random() < 0.08:  # single-end
            rname, pos, cigar, rev = template_end(rng, refs, hot)
            out.append(read(rng, name, 0x10 if rev else 0, rname, pos,
                            length=cigar_query_length(cigar), cigar=cigar,
                            tags=template_tags(rng, rng.choice(["Z:rgA", "Z:rgC", None]), None,
                                               rng.choice(CELL_BARCODES))))
            continue
        out.extend(template_pair(rng, name, refs, hot))
    rng.shuffle(out)
    return header(TEMPLATE_REFS, extra=TEMPLATE_READ_GROUPS) + "".join(out)



# Read groups whose ID comes twice: samtools takes, for each ID, the first
# line that has an LB.
CELL_READ_GROUPS = ["@RG\tID:c1\tSM:s", "@RG\tID:c1\tLB:libLate\tSM:s",
                    "@RG\tID:c2\tLB:libFirst\tSM:s", "@RG\tID:c2\tLB:libSecond\tSM:s",
                    "@RG\tID:c3\tLB:libFirst\tSM:s", "@RG\tID:1AE3\tLB:libHex\tSM:s"]
CELL_RGS = ["Z:c1", "Z:c2", "Z:c3", "Z:1AE3", "H:1AE3", "i:7", None]
CELL_LOCI = [("p1", 1000), ("p1", 1300), ("p2", 1000)]
CELL_CIGARS = ["30M", "2S28M", "28M2S", "1H29M"]


def cell_pair(rng, name, tags):
    """A pair at two of CELL_LOCI, opposite strands, MC tags set."""
    (rname, pos), (mname, mpos) = rng.choice(CELL_LOCI), rng.choice(CELL_LOCI)
    cigars = [rng.choice(CELL_CIGARS), rng.choice(CELL_CIGARS)]
    rev = rng.random() < 0.5
    ends = [(rname, pos, 0x40 | (0x10 if rev else 0x20)), (mname, mpos, 0x80 | (0x20 if rev else 0x10))]
    out = []
    for i in range(2):
        (here, at, flag), (there, there_at, _) = ends[i], ends[1 - i]
        out.append(read(rng, name, 0x1 | flag, here, at, length=cigar_query_length(cigars[i]),
                        rnext="=" if there == here else there, pnext=there_at,
                        tags=tags + [f"MC:Z:{cigars[1 - i]}"], cigar=cigars[i]))
    return out


def cell_templates(rng, count=600):
    """Single-cell style templates on three loci, so that the ends tie often
    and library, CB, MI and name decide: read groups given twice, RG as Z,
    H and an integer, every kind of cell barcode and MI."""
    out = []
    for _ in range(count):
        tags = template_tags(rng, rng.choice(CELL_RGS), molecule_id(rng),
                             rng.choice(CELL_BARCODES))
        out.extend(cell_pair(rng, f"c{rng.randint(0, 300)}", tags))
    rng.shuffle(out)
    return header(TEMPLATE_REFS, extra=CELL_READ_GROUPS) + "".join(out)


COMPLEMENT = str.maketrans("ACGTN", "TGCAN")


def minimiser_seq(rng, reference, length):
    """A read for -M: mostly from the reference (either strand, a few
    errors), some random, homopolymer-rich, with IUPAC codes, or shorter
    than a k-mer."""
    kind = rng.random()
    if kind < 0.55:
        name = rng.choice(sorted(reference))
        start = rng.randint(0, len(reference[name]) - length)
        seq = list(reference[name][start:start + length])
        for j in range(len(seq)):
            if rng.random() < 0.01:
                seq[j] = rng.choice("ACGTN")
        seq = "".join(seq)
        return seq[::-1].translate(COMPLEMENT) if rng.random() < 0.5 else seq
    if kind < 0.65:
        return "".join(rng.choice("AAAAAACCGGT") for _ in range(length))
    if kind < 0.72:
        return "".join(rng.choice("ACGTNRYKMSWBDHV=") for _ in range(length))
    if kind < 0.8:
        return random_seq(rng, rng.choice([0, 1, 5, 12, 19, 20, 21]))
    return random_seq(rng, length)


def minimiser_reads(rng, count=2500, length=None, placed=True):
    """Unplaced reads (tid -1, some with POS, PNEXT or TLEN, which -M clears) for -M,
    drawn from mixed.fa's sequences so that -I mixed.fa places them; with
    placed, also mapped reads and unmapped reads that keep a position."""
    reference = fasta_sequences(mixed_reference_text())
    out = []
    for i in range(count):
        name = f"m{rng.randint(0, 10**6)}"
        if placed and rng.random() < 0.15:
            rname = rng.choice(sorted(reference))
            flag = rng.choice([0, 0x10, 0x4, 0x49])
            out.append(read(rng, name, flag, rname, rng.randint(1, 19000), length=30))
            continue
        seq = minimiser_seq(rng, reference, length or rng.choice([30, 50, 100, 150, 151]))
        flag = rng.choice([0x4, 0x14, 0x4D, 0x8D, 0x9D, 0x6D])
        qual = random_qual(rng, len(seq)) if seq and rng.random() < 0.8 else "*"
        pnext, tlen = (rng.randint(1, 500), rng.randint(-300, 300)) if rng.random() < 0.1 else (0, 0)
        pos = rng.randint(1, 500) if rng.random() < 0.05 else 0    # unplaced, yet a POS
        out.append(sam_line(name, flag, "*", pos, 0, "*", "*", pnext, tlen, seq or "*", qual))
    return header(MIXED_REFS) + "".join(out)

