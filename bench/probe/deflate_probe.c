/* deflate_probe.c -- how fast one libdeflate build compresses BGZF-sized blocks.
 *
 * Usage: deflate_probe FILE [LEVEL] [PASSES]
 * Compresses FILE (e.g. uncompressed BAM, `samtools view -u`) in blocks of
 * 0xff00 bytes, as htslib's BGZF writer cuts them, at libdeflate LEVEL (7:
 * what htslib uses for samtools' default level 6), PASSES times.  Prints the
 * CPU seconds of the compression alone and a digest of the compressed
 * bytes, so that two builds can be checked to write the same bytes.
 * Build it once per way of linking libdeflate (bench/probe/README.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <libdeflate.h>

#define BLOCK 0xff00

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint8_t *read_all(const char *fn, size_t *n)
{
    FILE *f = fopen(fn, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = len > 0 ? malloc((size_t)len) : NULL;
    *n = data ? fread(data, 1, (size_t)len, f) : 0;
    fclose(f);
    return data;
}

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: deflate_probe FILE [LEVEL] [PASSES]\n"), 2;
    int level = argc > 2 ? atoi(argv[2]) : 7, passes = argc > 3 ? atoi(argv[3]) : 1;
    size_t n;
    uint8_t *data = read_all(argv[1], &n), out[BLOCK + 1024];
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    if (!data || !c) return fprintf(stderr, "deflate_probe: cannot read %s\n", argv[1]), 1;
    uint64_t total = 0;
    uint32_t digest = 0;
    double t0 = cpu_seconds();
    for (int p = 0; p < passes; p++)
        for (size_t at = 0; at < n; at += BLOCK) {
            size_t len = n - at < BLOCK ? n - at : BLOCK;
            size_t got = libdeflate_deflate_compress(c, data + at, len, out, sizeof out);
            total += got;
            if (p == 0) digest = libdeflate_crc32(digest, out, got);
        }
    double t = cpu_seconds() - t0;
    printf("level %d: %zu bytes -> %llu per pass, %.3f CPU s per pass, digest %08x\n",
           level, n, (unsigned long long)(total / (uint64_t)passes), t / passes, digest);
    libdeflate_free_compressor(c);
    free(data);
    return 0;
}
