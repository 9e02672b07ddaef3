"""BGZF and BAM bytes, for tests that build or damage files byte by byte:
the BGZF blocks of a file, a file inflated, BGZF made from raw bytes
(stored or deflated), one block corrupted; a BAM's header and first record
located, references dropped from its header, a field patched.
"""

import gzip
import struct
import zlib

BGZF_EOF = bytes.fromhex(
    "1f8b08040000000000ff0600424302001b0003000000000000000000")
# A BGZF block header up to BSIZE: gzip magic, deflate, FEXTRA, mtime 0,
# XFL 0, OS 255, XLEN 6, subfield "BC" of length 2.
BGZF_HEAD = bytes.fromhex("1f8b08040000000000ff060042430200")


def bgzf_blocks(data):
    """[(offset, size)] of the BGZF blocks that make up data."""
    blocks, offset = [], 0
    while offset < len(data):
        if data[offset:offset + 4] != BGZF_HEAD[:4] \
                or data[offset + 12:offset + 16] != b"BC\x02\x00":
            raise ValueError(f"no BGZF block at offset {offset}")
        (bsize,) = struct.unpack_from("<H", data, offset + 16)
        blocks.append((offset, bsize + 1))
        offset += bsize + 1
    return blocks


def bgzf_inflate(data):
    """BGZF's bytes inflated block by block.  gzip.decompress() copies the
    rest of its input for each member it reads (Python 3.11): its time grows
    with the square of a file's blocks.  Anything but well-formed blocks, each
    deflate stream ending at its trailer and matching its CRC and size, goes
    to gzip.decompress(), so damaged files are read, or refused, as before."""
    view, blocks, offset = memoryview(data), [], 0
    try:
        while offset < len(data):
            if data[offset:offset + 4] != b"\x1f\x8b\x08\x04" \
                    or data[offset + 10:offset + 16] != b"\x06\x00BC\x02\x00":
                raise ValueError("not a BGZF block")
            end = offset + struct.unpack_from("<H", data, offset + 16)[0] + 1
            crc, size = struct.unpack_from("<II", data, end - 8)
            inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            block = inflater.decompress(view[offset + 18:end - 8])
            if not inflater.eof or inflater.unused_data or zlib.crc32(block) != crc \
                    or len(block) != size:
                raise ValueError("a damaged BGZF block")
            blocks.append(block)
            offset = end
    except (ValueError, struct.error, zlib.error):
        return gzip.decompress(data)
    return b"".join(blocks)


def bgzf_compress(raw, level=6, block=0xff00):
    """raw bytes as BGZF blocks of `block` bytes each (level 0: stored, so
    the bytes show as they are inside the file), ended by the EOF block."""
    out = bytearray()
    for start in range(0, len(raw), block):
        chunk = raw[start:start + block]
        z = zlib.compressobj(level, zlib.DEFLATED, -15)
        body = z.compress(chunk) + z.flush()
        out += BGZF_HEAD + struct.pack("<H", len(body) + 25) + body
        out += struct.pack("<II", zlib.crc32(chunk), len(chunk))
    return bytes(out + BGZF_EOF)


def bam_layout(raw):
    """Uncompressed BAM -> (header text, [raw @SQ entries], offset of the
    first record)."""
    if raw[:4] != b"BAM\x01":
        raise ValueError("not BAM")
    (l_text,) = struct.unpack_from("<i", raw, 4)
    text = raw[8:8 + l_text]
    offset = 8 + l_text
    (n_ref,) = struct.unpack_from("<i", raw, offset)
    offset += 4
    entries = []
    for _ in range(n_ref):
        (l_name,) = struct.unpack_from("<i", raw, offset)
        entries.append(raw[offset:offset + 8 + l_name])
        offset += 8 + l_name
    return text, entries, offset


def bam_with_refs(raw, keep):
    """The same records under a header that keeps only the first `keep`
    references, so records on the others point past the header's end."""
    text, entries, first = bam_layout(raw)
    kept = {e[4:4 + struct.unpack_from("<i", e)[0] - 1] for e in entries[:keep]}
    lines = [l for l in text.rstrip(b"\0").split(b"\n") if l]
    lines = [l for l in lines if not l.startswith(b"@SQ")
             or any(f == b"SN:" + name for f in l.split(b"\t") for name in kept)]
    new_text = b"".join(l + b"\n" for l in lines)
    return (b"BAM\x01" + struct.pack("<i", len(new_text)) + new_text
            + struct.pack("<i", keep) + b"".join(entries[:keep]) + raw[first:])


# Offsets inside a BAM record, counted from its block_size field.
REC_BLOCK_SIZE, REC_L_SEQ = 0, 20


def patched(raw, offset, fmt, value):
    data = bytearray(raw)
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


def flip_byte_in_block(data, index, mask=0x55):
    """data with one byte in the middle of block `index`'s compressed data
    changed: the block no longer matches its CRC32."""
    offset, size = bgzf_blocks(data)[index]
    body_start, body_end = offset + 18, offset + size - 8
    data = bytearray(data)
    data[(body_start + body_end) // 2] ^= mask
    return bytes(data)
