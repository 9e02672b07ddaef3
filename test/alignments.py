"""Reading sort outputs (SAM, BAM, CRAM) into a form that can be compared
exactly, and explaining the first difference between two of them.

BAM is parsed here byte by byte so that records are compared as the exact
bytes samtools wrote; SAM as its text lines.  CRAM has no stable byte form
across htslib versions, so it is decoded to SAM by a viewer the caller
supplies (the oracle's `samtools view`), the same viewer for both sides.
"""

import difflib
import struct
from dataclasses import dataclass

from bgzf import bgzf_inflate


@dataclass
class Alignments:
    fmt: str               # "SAM", "BAM" or "CRAM"
    header: list           # header text lines, without the newline
    refs: list             # BAM's binary (name, length) list; None otherwise
    records: list          # SAM: text lines; BAM: raw record bytes


def sniff_format(data):
    if data.startswith(b"CRAM"):
        return "CRAM"
    if data.startswith(b"\x1f\x8b"):
        return "BAM"
    return "SAM"


def parse_sam(text, fmt="SAM"):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n_header = 0
    while n_header < len(lines) and lines[n_header].startswith("@"):
        n_header += 1
    return Alignments(fmt, lines[:n_header], None, lines[n_header:])


def parse_bam(data):
    raw = bgzf_inflate(data)
    if raw[:4] != b"BAM\x01":
        raise ValueError("not a BAM file (bad magic after BGZF)")
    (l_text,) = struct.unpack_from("<i", raw, 4)
    text = raw[8:8 + l_text].split(b"\0", 1)[0].decode()
    offset = 8 + l_text
    (n_ref,) = struct.unpack_from("<i", raw, offset)
    offset += 4
    refs = []
    for _ in range(n_ref):
        (l_name,) = struct.unpack_from("<i", raw, offset)
        name = raw[offset + 4:offset + 4 + l_name - 1].decode()
        (length,) = struct.unpack_from("<i", raw, offset + 4 + l_name)
        refs.append((name, length))
        offset += 8 + l_name
    records = []
    while offset < len(raw):
        (block_size,) = struct.unpack_from("<i", raw, offset)
        records.append(raw[offset:offset + 4 + block_size])
        offset += 4 + block_size
    header = text.split("\n")
    if header and header[-1] == "":
        header.pop()
    return Alignments("BAM", header, refs, records)


def load(data, cram_to_sam=None):
    """data: the file's bytes.  cram_to_sam(data) -> SAM text, for CRAM.
    Raises ValueError if data cannot be read."""
    fmt = sniff_format(data)
    try:
        if fmt == "BAM":
            return parse_bam(data)
        if fmt == "CRAM":
            return parse_sam(cram_to_sam(data), fmt="CRAM")
        return parse_sam(data.decode())
    except (struct.error, OSError, EOFError, UnicodeDecodeError) as error:
        raise ValueError(f"unreadable {fmt}: {error}") from error


def without_pg(header):
    return [line for line in header if not line.startswith("@PG")]


def describe_record(record):
    """A short human-readable summary of one record, SAM text or BAM bytes."""
    if isinstance(record, str):
        return record[:160] + ("..." if len(record) > 160 else "")
    _, tid, pos, l_name = struct.unpack_from("<iiiB", record, 0)
    (flag,) = struct.unpack_from("<H", record, 18)
    name = record[36:36 + l_name - 1].decode(errors="replace")
    return (f"name={name[:60]} flag={flag} tid={tid} pos={pos} "
            f"({len(record)} bytes)")


def header_differences(actual, expected, keep_pg):
    strip = (lambda h: h) if keep_pg else without_pg
    a, e = strip(actual.header), strip(expected.header)
    if a == e:
        return []
    diff = difflib.unified_diff(e, a, "expected", "actual", lineterm="", n=0)
    return ["header differs" + ("" if keep_pg else " (ignoring @PG)")] + \
        [line[:160] for line in list(diff)[2:10]]


def record_differences(actual, expected):
    a, e = actual.records, expected.records
    for i, (ra, re_) in enumerate(zip(a, e)):
        if ra != re_:
            lines = [f"record #{i} differs (of {len(e)} expected)",
                     f"  expected: {describe_record(re_)}",
                     f"  actual:   {describe_record(ra)}"]
            where = [j for j in range(len(e)) if e[j] == ra][:3]
            if where:
                lines.append(f"  actual #{i} is expected at #{where}")
            return lines
    if len(a) != len(e):
        return [f"record count differs: expected {len(e)}, got {len(a)}"]
    return []


def differences(actual, expected, keep_pg=False):
    """A list of lines explaining how actual differs; empty if it doesn't.
    @PG header lines are ignored unless keep_pg."""
    if actual.fmt != expected.fmt:
        return [f"format differs: expected {expected.fmt}, got {actual.fmt}"]
    problems = header_differences(actual, expected, keep_pg)
    if actual.refs != expected.refs:
        problems.append(f"BAM reference list differs: expected "
                        f"{len(expected.refs)} refs, got {len(actual.refs)}")
    return problems + record_differences(actual, expected)
