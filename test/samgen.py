"""The building blocks of the synthetic SAM inputs (test/samdata.py and
test/samdata_orders.py): one record's line, a header, random bases and
qualities, FASTA references.

Every function that draws takes a seeded random.Random, so the inputs are the
same on every run.
"""

import random

BASES = "ACGT"
MIXED_REFS = [("c1", 20000), ("c2", 20000), ("c3", 20000)]


def sam_line(qname, flag, rname, pos, mapq, cigar, rnext, pnext, tlen,
             seq, qual, tags=()):
    fields = [qname, flag, rname, pos, mapq, cigar, rnext, pnext, tlen,
              seq, qual, *tags]
    return "\t".join(str(f) for f in fields) + "\n"


def header(refs, hd="@HD\tVN:1.6\tSO:unsorted", extra=()):
    lines = [hd] if hd else []
    lines += [f"@SQ\tSN:{name}\tLN:{length}" for name, length in refs]
    lines += list(extra)
    return "".join(line + "\n" for line in lines)


def random_seq(rng, length):
    return "".join(rng.choices(BASES, k=length))


def random_qual(rng, length):
    return "".join(chr(33 + q) for q in rng.choices(range(2, 42), k=length))


def read(rng, qname, flag, rname, pos, length=50, rnext="*", pnext=0,
         tlen=0, tags=(), cigar=None, mapq=None):
    """One record with random SEQ/QUAL; unmapped records get CIGAR '*'."""
    if cigar is None:
        cigar = "*" if flag & 0x4 else f"{length}M"
    if mapq is None:
        mapq = 0 if flag & 0x4 else rng.randint(0, 60)
    return sam_line(qname, flag, rname, pos, mapq, cigar, rnext, pnext, tlen,
                    random_seq(rng, length), random_qual(rng, length), tags)



def reference_fasta(rng, refs, width=60):
    """A FASTA whose sequences match refs' names and lengths (for CRAM)."""
    parts = []
    for name, length in refs:
        seq = random_seq(rng, length)
        parts.append(f">{name}\n")
        parts.extend(seq[i:i + width] + "\n" for i in range(0, length, width))
    return "".join(parts)



def fasta_sequences(text):
    """name -> sequence, from FASTA text."""
    seqs, name = {}, None
    for line in text.splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            seqs[name] = []
        elif name:
            seqs[name].append(line.strip())
    return {n: "".join(parts) for n, parts in seqs.items()}



def mixed_reference_text():
    return reference_fasta(random.Random("rocksort-mixed-ref"), MIXED_REFS)
