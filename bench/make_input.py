#!/usr/bin/env python3
"""Writes a realistic, shuffled, paired-end BAM for the sort benchmark.

    make_input.py SIZE OUT.bam [--seed N] [--threads T]

SIZE is the target compressed size (200M, 1G; K/M/G are powers of 1024).
The records look like bwa mem output of an Illumina run, because what a sort
costs depends on it: record length, tag load, and how well the records
compress before (shuffled) and after (sorted) the sort.

  - pairs of 2x150 (85%) and 2x100 (15%, a second flowcell), read names like
    SIM:1:FCX:1:1101:12345:6789, one read group per flowcell lane;
  - qualities binned in Illumina's 8 levels, in runs that get worse toward
    the 3' end, so they compress like real ones rather than like noise;
  - CIGARs mostly 150M, some soft clips and small indels; NM, MD, MC, AS,
    XS and RG consistent with the bases; mate fields and TLEN consistent;
  - a few % of pairs with an unmapped mate, both mates unmapped,
    discordant mates, or a chimeric mate (supplementary record, SA tags);
  - the 25 GRCh38 primary references; reads fall in windows at ~30x depth,
    so the sorted output has overlapping reads and compresses like real WGS;
  - records in random order (mates far apart).

Python writes SAM text and `samtools view -b` compresses it on other cores.
The output is the same for the same seed, size and samtools build.
A sidecar OUT.bam.json keeps the record count and sizes for run_bench.py.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

GEN_VERSION = 1  # bump when the records change, so cached inputs are rebuilt
SAMTOOLS = os.environ.get("SAMTOOLS", "/usr/bin/samtools")

# Compressed BAM bytes per record of this generator (measured; keeps the
# record count a pure function of SIZE, hence the file deterministic).
BYTES_PER_RECORD = 126.0

REFS = [("chr1", 248956422), ("chr2", 242193529), ("chr3", 198295559),
        ("chr4", 190214555), ("chr5", 181538259), ("chr6", 170805979),
        ("chr7", 159345973), ("chr8", 145138636), ("chr9", 138394717),
        ("chr10", 133797422), ("chr11", 135086622), ("chr12", 133275309),
        ("chr13", 114364328), ("chr14", 107043718), ("chr15", 101991189),
        ("chr16", 90338345), ("chr17", 83257441), ("chr18", 80373285),
        ("chr19", 58617616), ("chr20", 64444167), ("chr21", 46709983),
        ("chr22", 50818468), ("chrX", 156040895), ("chrY", 57227415),
        ("chrM", 16569)]

# Illumina's 8-level quality binning (Q6, 15, 22, 27, 33, 37, 40), as Phred+33.
QUAL_LEVELS = "'07<BFI"
# Mean run lengths of good (>= Q33) and worse levels; these set how well
# qualities compress, tuned so the BAM compresses to ~0.4 of `view -u`.
QUAL_RUN_HIGH, QUAL_RUN_LOW = 2, 1
ALT_BASES = {"A": "CGT", "C": "AGT", "G": "ACT", "T": "ACG"}
# Mismatches per read: 16 equally likely draws, mostly none or one.
MISMATCHES = (0,) * 8 + (1,) * 4 + (2,) * 2 + (3, 5)

DEPTH = 30          # read depth inside the covered windows
SHUFFLE_BITS = 18   # shuffle buffer of 2^18 records: mates end up far apart
PAIRS_PER_TILE = 3000
TILES_PER_LANE = 2 * 6 * 78  # surfaces x swaths x tiles, as on a NovaSeq


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class Genome:
    """Reference bases at any (tid, pos): a 16 MiB random pool addressed by
    position.  Overlapping reads share bases, as in a real genome, without
    holding 3 Gbp in memory."""
    BITS = 24
    PAD = 4096  # longest slice, so a slice never wraps

    def __init__(self, rng):
        table = bytes(b"ACGT"[i & 3] for i in range(256))
        raw = rng.randbytes((1 << self.BITS) + self.PAD)
        self.bases = raw.translate(table).decode("ascii")
        self.offset = [rng.getrandbits(self.BITS) for _ in REFS]
        self.mask = (1 << self.BITS) - 1

    def at(self, tid, pos0, n):
        o = (self.offset[tid] + pos0) & self.mask
        return self.bases[o:o + n]

    def junk(self, rng, n):
        """Bases from nowhere: soft clips, insertions, unmapped reads."""
        o = rng.getrandbits(self.BITS)
        return self.bases[o:o + n]


def covered_windows(rng, n_pairs, mean_read_len):
    """Windows of the references that receive reads, sized so that reads
    land at DEPTH depth.  Windows are spread over all references; chrM gets
    one whole, so its depth comes out higher, as it does in real data."""
    covered = n_pairs * 2 * mean_read_len / DEPTH
    n_win = max(200, int(covered // 100_000))
    win = max(2000, int(covered / n_win))
    total = sum(length for _, length in REFS)
    windows = []
    for tid, (_, length) in enumerate(REFS):
        size = min(win, length - 3000)
        for _ in range(max(1, round(n_win * length / total))):
            windows.append((tid, rng.randrange(1000, length - size - 1500), size))
    return windows


def quality_pool(rng, read_len, count):
    """Quality strings built from runs of one level: a run's level drifts
    down toward the 3' end, and a read has its own overall quality."""
    pool = []
    for _ in range(count):
        top = 6 if rng.random() < 0.7 else 5
        out, i = [], 0
        while i < read_len:
            decay = 2.5 * i / read_len
            level = top - int(decay + rng.expovariate(1.6))
            level = min(6, max(0, level))
            run = 1 + int(rng.expovariate(1 / (QUAL_RUN_HIGH if level >= 5 else QUAL_RUN_LOW)))
            out.append(QUAL_LEVELS[level] * run)
            i += run
        pool.append("".join(out)[:read_len])
    return pool


class Flowcell:
    """One sequencing run: read length, read names, read groups."""

    def __init__(self, rng, run, flowcell, read_len, pool_size):
        self.prefix = f"SIM:{run}:{flowcell}"
        self.flowcell = flowcell
        self.read_len = read_len
        self.quals = quality_pool(rng, read_len, pool_size)
        self.pool_mask = pool_size - 1
        self.pairs = 0

    def next_name(self, rng):
        """A unique name: the pair counter fixes lane, tile and y, x is free."""
        j = self.pairs
        self.pairs += 1
        t, k = divmod(j, PAIRS_PER_TILE)
        lane, t = divmod(t, TILES_PER_LANE)
        surface, t = divmod(t, 6 * 78)
        swath, tile = divmod(t, 78)
        y = 1000 + 12 * k + rng.getrandbits(3)
        x = 1000 + rng.getrandbits(15)
        name = (f"{self.prefix}:{lane + 1}:{surface + 1}{swath + 1}{tile + 1:02d}"
                f":{x}:{y}")
        return name, f"{self.flowcell}.{lane + 1}"

    def lanes_for(self, n_pairs):
        return 1 + n_pairs // (PAIRS_PER_TILE * TILES_PER_LANE)

    def qual(self, rng):
        return self.quals[rng.getrandbits(16) & self.pool_mask]


class Alignment:
    """One aligned read: where, how, and the tags bwa derives from it."""
    __slots__ = ("tid", "pos0", "rev", "cigar", "seq", "ref_len", "nm", "md",
                 "score")


class Simulator:
    def __init__(self, seed, n_pairs):
        rng = self.rng = random.Random(seed)
        self.genome = Genome(rng)
        self.runs = [Flowcell(rng, 1, "FCX", 150, 1 << 16),
                     Flowcell(rng, 2, "FCY", 100, 1 << 14)]
        self.windows = covered_windows(rng, n_pairs, 0.85 * 150 + 0.15 * 100)

    # -- alignments ---------------------------------------------------------

    def shape(self, read_len):
        """CIGAR shape: (kind, a, b) and the reference span it covers."""
        r = self.rng.random()
        if r < 0.86:
            return ("M", 0, 0), read_len
        rng = self.rng
        if r < 0.92:
            clip = 3 + int(rng.expovariate(1 / 15)) % (read_len // 2)
            return ("S" if r < 0.89 else "s", clip, 0), read_len - clip
        if r < 0.96:
            n = 1 + rng.getrandbits(2)
            return ("I", rng.randrange(20, read_len - 20 - n), n), read_len - n
        n = 1 + rng.getrandbits(3) % 6
        return ("D", rng.randrange(20, read_len - 20), n), read_len + n

    def align(self, tid, pos0, rev, read_len, shape):
        """Builds the read's bases from the reference with a few mismatches,
        and its CIGAR, NM, MD and AS from the same events."""
        (kind, a, n), ref_len = shape
        rng, genome = self.rng, self.genome
        ref = genome.at(tid, pos0, ref_len)
        bases = ref
        events = []  # (ref offset, MD text, ref span)
        m = MISMATCHES[rng.getrandbits(4)]
        if m:
            bases = list(ref)
            for _ in range(m):
                off = rng.randrange(ref_len)
                if kind == "D" and a <= off < a + n:
                    continue  # no mismatch inside a deletion
                bases[off] = ALT_BASES[ref[off]][rng.getrandbits(2) % 3]
                events.append((off, ref[off], 1))
            bases = "".join(bases)
            events = sorted(set(events))
        indel = 0
        if kind == "M":
            seq, cigar = bases, f"{read_len}M"
        elif kind == "S":
            seq, cigar = genome.junk(rng, a) + bases, f"{a}S{ref_len}M"
        elif kind == "s":
            seq, cigar = bases + genome.junk(rng, a), f"{ref_len}M{a}S"
        elif kind == "I":
            seq = bases[:a] + genome.junk(rng, n) + bases[a:]
            cigar, indel = f"{a}M{n}I{ref_len - a}M", n
        else:
            seq, indel = bases[:a] + bases[a + n:], n
            cigar = f"{a}M{n}D{read_len - a}M"
            events = sorted(events + [(a, "^" + ref[a:a + n], n)])
        aln = Alignment()
        aln.tid, aln.pos0, aln.rev, aln.cigar, aln.seq = tid, pos0, rev, cigar, seq
        aln.ref_len = ref_len
        aln.nm = len(events) - (kind == "D") + indel
        aln.md = md_string(events, ref_len)
        matched = ref_len - (n if kind == "D" else 0)
        aln.score = matched - 5 * (aln.nm - indel) - (6 + indel if indel else 0)
        return aln

    def random_locus(self):
        tid, start, size = self.windows[int(self.rng.random() * len(self.windows))]
        return tid, start + int(self.rng.random() * size)

    # -- records ------------------------------------------------------------

    def mapq_xs(self, score):
        r = self.rng.random()
        if r < 0.90:
            return 60, (0 if r < 0.55 else self.rng.randrange(19, max(20, score - 25)))
        if r < 0.95:
            return 0, score
        return 1 + self.rng.getrandbits(6) % 59, max(0, score - 1 - self.rng.getrandbits(4))

    def mapped_record(self, name, flag, aln, mate, qual, rg, tlen=0, extra=""):
        mapq, xs = self.mapq_xs(aln.score)
        if mate is None:  # mate unmapped: it sits at this read's position
            rnext, pnext, mc = "=", aln.pos0 + 1, ""
        else:
            rnext = "=" if mate.tid == aln.tid else REFS[mate.tid][0]
            pnext, mc = mate.pos0 + 1, f"\tMC:Z:{mate.cigar}"
            flag |= 0x20 if mate.rev else 0
        flag |= 0x10 if aln.rev else 0
        if aln.rev:
            qual = qual[::-1]  # the sequencer's 3' end is on the left
        return (f"{name}\t{flag}\t{REFS[aln.tid][0]}\t{aln.pos0 + 1}\t{mapq}\t"
                f"{aln.cigar}\t{rnext}\t{pnext}\t{tlen}\t{aln.seq}\t{qual}\t"
                f"NM:i:{aln.nm}\tMD:Z:{aln.md}{mc}\tAS:i:{aln.score}\t"
                f"XS:i:{xs}{extra}\tRG:Z:{rg}")

    def unmapped_record(self, name, flag, read_len, qual, rg, mate=None):
        seq = self.genome.junk(self.rng, read_len)
        if mate is None:
            return (f"{name}\t{flag}\t*\t0\t0\t*\t*\t0\t0\t{seq}\t{qual}\t"
                    f"AS:i:0\tXS:i:0\tRG:Z:{rg}")
        flag |= 0x20 if mate.rev else 0
        ref, pos = REFS[mate.tid][0], mate.pos0 + 1
        return (f"{name}\t{flag}\t{ref}\t{pos}\t0\t*\t=\t{pos}\t0\t{seq}\t{qual}\t"
                f"MC:Z:{mate.cigar}\tAS:i:0\tXS:i:0\tRG:Z:{rg}")

    def pair(self):
        """The records of one read pair (two, or three with a supplementary)."""
        rng = self.rng
        run = self.runs[0] if rng.random() < 0.85 else self.runs[1]
        L = run.read_len
        name, rg = run.next_name(rng)
        q1, q2 = run.qual(rng), run.qual(rng)
        first_is_left = rng.getrandbits(1)
        f_left, f_right = (0x41, 0x81) if first_is_left else (0x81, 0x41)
        r = rng.random()
        if r < 0.005:
            return [self.unmapped_record(name, 0x4D, L, q1, rg),
                    self.unmapped_record(name, 0x8D, L, q2, rg)]
        left = self.place_left(L, r < 0.025 and rng.getrandbits(1) == 1)
        if r < 0.025:  # one mate unmapped
            return [self.mapped_record(name, f_left | 0x8, left, None, q1, rg),
                    self.unmapped_record(name, f_right | 0x4, L, q2, rg, left)]
        if r < 0.035:  # discordant: mate anywhere else
            shape = self.shape(L)
            tid, pos0 = self.random_locus()
            right = self.align(tid, pos0, rng.getrandbits(1) == 1, L, shape)
        else:
            right = self.place_right(left, L)
            f_left |= 0x2
            f_right |= 0x2
        tlen = template_length(left, right)
        if r < 0.05:  # chimeric left mate: its tail aligns elsewhere
            return self.chimera(name, f_left, left, right, q1, rg, tlen) + [
                self.mapped_record(name, f_right, right, left, q2, rg, -tlen)]
        return [self.mapped_record(name, f_left, left, right, q1, rg, tlen),
                self.mapped_record(name, f_right, right, left, q2, rg, -tlen)]

    def place_left(self, L, rev=False):
        shape = self.shape(L)
        tid, pos0 = self.random_locus()
        return self.align(tid, pos0, rev, L, shape)

    def place_right(self, left, L):
        """The reverse mate of an FR pair, ending one insert size after the
        left mate's start."""
        insert = max(L, min(1000, int(self.rng.gauss(350, 80))))
        shape = self.shape(L)
        pos0 = max(left.pos0, left.pos0 + insert - shape[1])
        return self.align(left.tid, pos0, True, L, shape)

    def chimera(self, name, flag, left, mate, qual, rg, tlen):
        """Primary `aM bS` plus supplementary `aH bM` elsewhere, on the same
        strand, both with SA tags; the clipped tail is the other locus' bases."""
        rng = self.rng
        L = len(left.seq)
        a = rng.randrange(40, L - 40)
        head = self.align(left.tid, left.pos0, False, a, (("M", 0, 0), a))
        tid, pos0 = self.random_locus()
        tail = self.align(tid, pos0, False, L - a, (("M", 0, 0), L - a))
        head.seq += tail.seq
        head.cigar = f"{a}M{L - a}S"
        supp_cigar = f"{a}H{L - a}M"
        sa_head = f"\tSA:Z:{REFS[tid][0]},{pos0 + 1},+,{a}S{L - a}M,60,{tail.nm};"
        sa_tail = (f"\tSA:Z:{REFS[head.tid][0]},{head.pos0 + 1},+,"
                   f"{head.cigar},60,{head.nm};")
        primary = self.mapped_record(name, flag, head, mate, qual, rg,
                                     template_length(head, mate), sa_head)
        tail.cigar = supp_cigar
        supp = self.mapped_record(name, flag | 0x800, tail, mate, qual[a:], rg,
                                  0, sa_tail)
        return [primary, supp]


def md_string(events, ref_len):
    """MD:Z from sorted (offset, text, span) events; a number between any
    two events, possibly 0, as the SAM spec asks."""
    if not events:
        return str(ref_len)
    out, last = [], 0
    for off, text, span in events:
        out.append(str(off - last))
        out.append(text)
        last = off + span
    out.append(str(ref_len - last))
    return "".join(out)


def template_length(a, b):
    """|TLEN| from the outermost aligned bases, 0 across references; the
    sign is for `a`."""
    if a is None or b is None or a.tid != b.tid:
        return 0
    start = min(a.pos0, b.pos0)
    end = max(a.pos0 + a.ref_len, b.pos0 + b.ref_len)
    return (end - start) if a.pos0 <= b.pos0 else -(end - start)


def sam_header(sim, n_pairs):
    lines = ["@HD\tVN:1.6\tSO:unsorted"]
    lines += [f"@SQ\tSN:{name}\tLN:{length}" for name, length in REFS]
    for run in sim.runs:
        for lane in range(1, run.lanes_for(n_pairs) + 1):
            lines.append(f"@RG\tID:{run.flowcell}.{lane}\tSM:SIM\tLB:SIM-{run.flowcell}"
                         f"\tPL:ILLUMINA\tPU:{run.flowcell}.{lane}")
    lines.append("@PG\tID:bwa\tPN:bwa\tVN:0.7.17-r1188\tCL:bwa mem -t 2 ref.fa r1.fq r2.fq")
    return "\n".join(lines) + "\n"


class ShuffleWriter:
    """Random order with bounded memory: each record takes a random slot of
    a buffer and pushes the previous occupant out."""

    def __init__(self, out, rng):
        self.out, self.rng = out, rng
        self.slots, self.pending, self.count = [], [], 0

    def add(self, line):
        self.count += 1
        if len(self.slots) < (1 << SHUFFLE_BITS):
            self.slots.append(line)
            return
        j = self.rng.getrandbits(SHUFFLE_BITS)
        self.pending.append(self.slots[j])
        self.slots[j] = line
        if len(self.pending) >= 8192:
            self.flush_pending()

    def flush_pending(self):
        if self.pending:
            self.out.write(("\n".join(self.pending) + "\n").encode("ascii"))
            self.pending = []

    def close(self):
        self.rng.shuffle(self.slots)
        self.pending += self.slots
        self.slots = []
        self.flush_pending()


def uncompressed_size(path, threads):
    """Size of the same records as uncompressed BAM (`samtools view -u`)."""
    proc = subprocess.Popen([SAMTOOLS, "view", f"-@{threads}", "-u", "--no-PG", path],
                            stdout=subprocess.PIPE)
    total = 0
    while chunk := proc.stdout.read(1 << 20):
        total += len(chunk)
    if proc.wait():
        raise SystemExit(f"samtools view -u {path} failed")
    return total


def generate(size, out_path, seed, threads):
    n_records = max(1000, int(size / BYTES_PER_RECORD))
    n_pairs = int(n_records / 2.015)  # 1.5% of pairs carry a supplementary
    sim = Simulator(seed, n_pairs)
    tmp = out_path + ".part"
    start = time.monotonic()
    proc = subprocess.Popen([SAMTOOLS, "view", f"-@{threads}", "-b", "--no-PG",
                             "-o", tmp, "-"], stdin=subprocess.PIPE)
    proc.stdin.write(sam_header(sim, n_pairs).encode("ascii"))
    writer = ShuffleWriter(proc.stdin, sim.rng)
    while writer.count < n_records:
        for line in sim.pair():
            writer.add(line)
    writer.close()
    proc.stdin.close()
    if proc.wait():
        raise SystemExit("samtools view -b failed")
    seconds = time.monotonic() - start
    os.replace(tmp, out_path)
    return writer.count, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size", help="target compressed size, e.g. 200M, 1G")
    ap.add_argument("out", help="output BAM")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2,
                    help="samtools compression threads [2]")
    args = ap.parse_args()
    records, seconds = generate(parse_size(args.size), args.out, args.seed, args.threads)
    compressed = os.path.getsize(args.out)
    uncompressed = uncompressed_size(args.out, args.threads)
    stats = {"generator": GEN_VERSION, "seed": args.seed, "records": records,
             "compressed": compressed, "uncompressed": uncompressed,
             "ratio": round(compressed / uncompressed, 3),
             "seconds": round(seconds, 1)}
    with open(args.out + ".json", "w") as f:
        json.dump(stats, f, indent=1)
    print(f"{args.out}: {records} records, {compressed / 2**20:.1f} MiB compressed, "
          f"{uncompressed / 2**20:.1f} MiB uncompressed (samtools view -u), "
          f"ratio {stats['ratio']}, {seconds:.1f} s "
          f"({compressed / 2**20 / seconds:.1f} MiB/s)")


if __name__ == "__main__":
    sys.exit(main())
