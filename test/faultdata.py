"""Inputs for test/faults.py, built byte by byte.

BAM files whose header and records say what a test needs (references the
header lacks, reads long enough to make hundreds of sorted runs from a
small file), and the container layout of a CRAM file, so a test can cut it
where a container ends.  Every builder is deterministic given its rng.
"""

import struct

from bgzf import bgzf_compress


def reg2bin(beg, end):
    end -= 1
    for shift, first in ((14, 4681), (17, 585), (20, 73), (23, 9), (26, 1)):
        if beg >> shift == end >> shift:
            return first + (beg >> shift)
    return 0


def long_reads_bam(rng, count=45000, length=2000, noisy=0):
    """Long reads of repetitive bases and flat qualities: some 140 MB of
    records in a file of under 3 MB, made in a second.  With -m 1M that is
    some 400 sorted runs at -@1, as many as a 100 MB BAM of short reads.
    The first `noisy` reads have random bases instead: their runs take
    several times the room of the others'."""
    refs = [(b"chr1", 50_000_000), (b"chr2", 40_000_000), (b"chr3", 30_000_000)]
    text = b"@HD\tVN:1.6\tSO:unsorted\n" + b"".join(b"@SQ\tSN:%s\tLN:%d\n" % r
                                                    for r in refs)
    out = [b"BAM\x01", struct.pack("<i", len(text)), text, struct.pack("<i", 3)]
    for name, ln in refs:
        out += [struct.pack("<i", len(name) + 1), name + b"\0", struct.pack("<i", ln)]
    qual, cigar = bytes([30]) * length, struct.pack("<I", length << 4)
    for i in range(count):
        tid = rng.randrange(3)
        pos = rng.randrange(refs[tid][1] - length)
        qname = b"L%d:%d\0" % (rng.randrange(100000), i)
        seq = rng.randbytes((length + 1) // 2) if i < noisy else \
            (rng.randbytes(8) * (length // 16 + 1))[:(length + 1) // 2]
        body = struct.pack("<iiBBHHHiiii", tid, pos, len(qname), rng.randrange(61),
                           reg2bin(pos, pos + length), 1, rng.choice((0, 16)), length,
                           -1, -1, 0) + qname + cigar + seq + qual
        out += [struct.pack("<i", len(body)), body]
    return bgzf_compress(b"".join(out), level=1)


ALL_PHRED = bytes(b % 94 for b in range(256))
FOUR_PHRED = bytes((2, 12, 23, 37)[b % 4] for b in range(256))


def very_long_reads_bam(rng, count=600, longest=300_000, shortest=1, short_reads=0):
    """`count` reads of `shortest` bases to `longest` (records up to 1.5
    times that) and `short_reads` of 150, in random order, whose qualities
    are, in turn, absent (0xff), drawn from all 94 phred values, all 93, or
    drawn from 4 values: groups of compact runs hold one or two long records
    each, far past their 256 KiB."""
    refs = [(b"chr1", 50_000_000), (b"chr2", 40_000_000)]
    text = b"@HD\tVN:1.6\tSO:unsorted\n" + b"".join(b"@SQ\tSN:%s\tLN:%d\n" % r
                                                    for r in refs)
    out = [b"BAM\x01", struct.pack("<i", len(text)), text, struct.pack("<i", len(refs))]
    for name, ln in refs:
        out += [struct.pack("<i", len(name) + 1), name + b"\0", struct.pack("<i", ln)]
    lengths = [rng.randrange(shortest, longest) for _ in range(count)] + [150] * short_reads
    rng.shuffle(lengths)
    for i, length in enumerate(lengths):
        tid = rng.randrange(len(refs))
        pos = rng.randrange(refs[tid][1] - length)
        qname = b"V%d\0" % i
        kind = i % 4
        qual = (b"\xff" * length if kind == 0 else
                rng.randbytes(length).translate(ALL_PHRED) if kind == 1 else
                bytes([93]) * length if kind == 2 else
                rng.randbytes(length).translate(FOUR_PHRED))
        body = struct.pack("<iiBBHHHiiii", tid, pos, len(qname), rng.randrange(61),
                           reg2bin(pos, pos + length), 1, rng.choice((0, 16)), length,
                           -1, -1, 0) + qname + struct.pack("<I", length << 4) + \
            rng.randbytes((length + 1) // 2) + qual
        out += [struct.pack("<i", len(body)), body]
    return bgzf_compress(b"".join(out), level=1)


def bam_record(qname, tid, pos, mtid=-1, mpos=-1):
    """A 4-base record, mapped when tid >= 0, paired when mtid is given."""
    q = qname.encode() + b"\0"
    flag = (0 if tid >= 0 else 4) | (1 if mtid != -1 else 0)
    cigar = struct.pack("<I", 4 << 4) if tid >= 0 else b""
    body = struct.pack("<iiBBHHHiiii", tid, pos, len(q), 30, 4680, len(cigar) // 4,
                       flag, 4, mtid, mpos, 0) + q + cigar + b"\x12\x48" + b"\x1e" * 4
    return struct.pack("<i", len(body)) + body


def bam_bytes(text, refs, records):
    """A BAM whose text header and binary reference list are given apart."""
    t = text.encode()
    out = [b"BAM\x01", struct.pack("<i", len(t)), t, struct.pack("<i", len(refs))]
    for name in refs:
        out += [struct.pack("<i", len(name) + 1), name.encode() + b"\0",
                struct.pack("<i", 10000)]
    return bgzf_compress(b"".join(out + records))


def itf8(d, o):
    """CRAM's ITF8 integer at d[o] -> (value, next offset)."""
    b = d[o]
    if b < 0x80:
        return b, o + 1
    if b < 0xc0:
        return (b & 0x3f) << 8 | d[o + 1], o + 2
    if b < 0xe0:
        return (b & 0x1f) << 16 | d[o + 1] << 8 | d[o + 2], o + 3
    if b < 0xf0:
        return (b & 0x0f) << 24 | d[o + 1] << 16 | d[o + 2] << 8 | d[o + 3], o + 4
    return ((b & 0x0f) << 28 | d[o + 1] << 20 | d[o + 2] << 12 | d[o + 3] << 4
            | d[o + 4] & 0x0f), o + 5


def ltf8(d, o):
    """CRAM's LTF8 integer at d[o] -> (value, next offset)."""
    b, n = d[o], 0
    while n < 8 and b & (0x80 >> n):
        n += 1
    v = b & (0xff >> (n + 1)) if n < 8 else 0
    for i in range(n):
        v = (v << 8) | d[o + 1 + i]
    return v, o + 1 + n


def cram_containers(data):
    """Offsets of the containers of a CRAM 3 file (header and EOF included)."""
    offsets, o = [], 26
    while o < len(data):
        offsets.append(o)
        (length,) = struct.unpack_from("<i", data, o)
        p = o + 4
        for read in (itf8, itf8, itf8, itf8, ltf8, ltf8, itf8):
            _, p = read(data, p)
        landmarks, p = itf8(data, p)
        for _ in range(landmarks):
            _, p = itf8(data, p)
        o = p + 4 + length
    return offsets
