/* readout/merge_writer.c -- see readout/merge_writer.h. */
#include <errno.h>
#include <string.h>
#include <htslib/bgzf.h>
#include <htslib/cram.h>
#include <htslib/hfile.h>
#include "readout/merge_writer.h"
#include "codec/record.h"

/* CIGAR operations that BAM's 16-bit count holds.  htslib writes a longer
 * CIGAR as a CG tag, reading it as 32-bit words, which must be aligned. */
#define BAM_CIGAR_OPS_MAX 0xffff

/* Record bytes between output_file_drop_written() calls: the output's page
 * cache stays around this size. */
#define DROP_WRITTEN_EVERY (64u << 20)

/* BAM output copies record bytes as they are, so it can take a view of the
 * stored value; other formats parse the CIGAR, which must be aligned. */
static int corrupt(merge_writer *w, errmsg *err)
{
    w->corrupt = 1;
    return errmsg_set(err, "corrupt record in the temporary database '%s'",
                      w->store_name ? w->store_name : "(in memory)");
}

static int write_value(merge_writer *w, const uint8_t *v, size_t vlen, bam1_t *owned,
                       errmsg *err)
{
    bam1_t view, *b = &view;
    int zero_copy = w->fp->format.format == bam;
    if (record_value_view(v, vlen, &view) < 0) return corrupt(w, err);
    if (!zero_copy || view.core.n_cigar > BAM_CIGAR_OPS_MAX) {
        if (record_value_unpack(v, vlen, owned) < 0) return corrupt(w, err);
        b = owned;
    }
    if (w->verify) w->digest += record_digest(b);
    return sam_write1(w->fp, w->hdr, b) < 0 ? merge_writer_write_error(w->fp, w->out_name, err) : 0;
}

/* Returns nonzero when another writer asked this one to stop. */
static int count_written(merge_writer *w)
{
    if ((++w->records & PROGRESS_EVERY) != 0) return 0;
    uint64_t all = atomic_fetch_add(w->shown, PROGRESS_EVERY + 1) + PROGRESS_EVERY + 1;
    progress_set_written(w->prog, all);
    return w->stop && atomic_load(w->stop);
}

int merge_writer_put(merge_writer *w, const uint8_t *v, size_t vlen, bam1_t *owned, errmsg *err)
{
    errno = 0;
    int ret = write_value(w, v, vlen, owned, err);
    return ret == 0 && count_written(w) ? MERGE_WRITE_STOPPED : ret;
}

int merge_writer_write(merge_writer *w, run_merge *m, errmsg *err)
{
    bam1_t *owned = bam_init1();
    if (!owned) return errmsg_set(err, "out of memory writing '%s'", w->out_name);
    const uint8_t *v;
    size_t vlen, unwritten = 0;
    int ret = 0;
    while (ret == 0 && (v = run_merge_next(m, &vlen)) != NULL) {
        if ((ret = merge_writer_put(w, v, vlen, owned, err)) < 0) break;
        if (w->drop && (unwritten += vlen) >= DROP_WRITTEN_EVERY) {
            output_file_drop_written(w->drop);
            unwritten = 0;
        }
    }
    bam_destroy1(owned);
    if (ret == 0 && run_merge_failed(m))
        ret = errmsg_set(err, "out of memory opening a group of the temporary runs");
    return ret;
}

/* htslib 1.24's threaded SAM writer hangs when a write fails (disk full,
 * closed pipe): its writer thread waits for a lock that sam_write1() holds
 * while it waits for that thread to make room in the queue.  So SAM gets
 * threads for its BGZF compression only. */
void merge_writer_share_pool(samFile *fp, htsThreadPool *pool)
{
    if (!pool->pool) return;
    int text = fp->format.format == sam || fp->format.format == text_format;
    if (!text) hts_set_thread_pool(fp, pool);
    else if (fp->format.compression == bgzf)
        bgzf_thread_pool(fp->fp.bgzf, pool->pool, pool->qsize);
}

hFILE *merge_writer_hfile(const samFile *fp)
{
    if (fp->format.format == cram) return cram_fd_get_fp(fp->fp.cram);
    if (fp->format.format == bam || fp->format.compression != no_compression)
        return fp->fp.bgzf->fp;
    return fp->fp.hfile;
}

int merge_writer_write_error(const samFile *fp, const char *name, errmsg *err)
{
    int e = herrno(merge_writer_hfile(fp));
    if (!e) e = errno;
    return errmsg_set(err, "error writing to '%s': %s", name, e ? strerror(e)
                      : "htslib could not encode the record (e.g. a position BAM cannot hold)");
}
