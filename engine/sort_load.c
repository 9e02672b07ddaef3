/* engine/sort_load.c -- see engine/sort_load.h. */
#include <stdio.h>
#include <string.h>
#include "engine/sort_load.h"
#include "engine/sort_input.h"
#include "engine/sort_inputs.h"
#include "engine/sort_plan.h"
#include "util/clock_util.h"
#include "codec/record.h"
#include "engine/resume_fate.h"
#include "engine/resume_progress.h"
#include "load/batch_fill.h"
#include "load/record_parse.h"


static int start_spiller(sort_job *j)
{
    size_t cap = sort_plan_batch_bytes(j->o);
    spill_setup s = { .store = j->store, .prog = j->prog, .batch_cap = cap,
                      .pool = sort_plan_spill_pooled(j) ? j->pool.pool : NULL, .threads = j->o->threads };
    int r = spill_start(&j->q, &s);
    if (r == SPILL_NO_MEMORY)
        sort_job_fail("out of memory for a %zu-byte sort batch (lower -m)", cap);
    else if (r < 0)
        sort_job_fail("cannot start the spill thread");
    return r < 0 ? -1 : 0;
}

/* A run failed to go in.  A stored run found damaged meanwhile (a
 * background merge reads them all) makes a state wrong, as in the readout. */
static int spill_error(sort_job *j)
{
    if (store_shows_damage(j->q.error.msg)) resume_fate_state_wrong(j, "a stored run does not read back");
    return sort_job_fail("writing temporary data under '%s' failed: %s", store_run_dir(j->store),
                         j->q.error.msg);
}

/* Hands a full batch to the spill thread, with the note a resumable sort
 * journals with its run. */
static batch *hand_over(sort_job *j, batch *full)
{
    byte_writer note = { 0 };
    if (j->resume.on) resume_progress_note_now(j, &note);
    batch *next = note.failed ? NULL : spill_swap(&j->q, full, &note);
    if (note.failed) {
        spill_input_ended(&j->q);   /* no pool job touches full any more */
        batch_destroy(full);
        sort_job_fail("out of memory reading '%s'", j->in_fn);
    }
    bw_free(&note);
    return next;
}

/* A BAM record's bytes besides its variable-length data (bam1_t's l_data):
 * block_size and the fixed fields. */
#define BAM_FIXED_BYTES 36

/* Permille of the inputs' files consumed; -1 if not known. */
static int input_permille(const sort_job *j)
{
    int64_t at = sort_inputs_consumed(j);
    uint64_t total = sort_inputs_total(j);
    if (at < 0 || !total) return -1;
    uint64_t pm = (uint64_t)at * 1000 / total;
    return pm > 1000 ? 1000 : (int)pm;
}

static void report_reading(const sort_job *j)
{
    if (j->prog) progress_set_read(j->prog, j->records_in, j->bytes_in, input_permille(j));
}

/* Adds one record to the batch being filled, handing full batches to the
 * spill thread.  Returns 0, or -1 once the error is reported. */
static int take_record(sort_job *j, batch_fill *fill, batch **cur)
{
    int added;
    errmsg err;
    bam1_t *b = batch_fill_slot(fill);
    if (sort_input_check_refs(j, b) < 0) return -1;
    /* A stream's records are hashed as read, before -M rewrites them
     * (sort_key_record_finish()); --verify's digest is of the record as it
     * will be written, after. */
    uint64_t hash = j->resume.hash_stream
                  ? resume_progress_stream_hash(j->resume.stream_hash, record_digest(b)) : 0;
    while ((added = batch_fill_add(fill, *cur, &j->sort, j->records_in, &err)) == 0) {
        batch_fill_settle(fill);
        if (!j->size_planned)
            sort_plan_from_input(j, *cur, sort_inputs_consumed(j), sort_inputs_total(j));
        if (!(*cur = hand_over(j, *cur))) return j->q.failed ? spill_error(j) : -1;
    }
    if (added < 0) return sort_job_fail("'%s': %s", j->in_fn, err.msg);
    uint64_t digest = j->o->verify ? record_digest(b) : 0;
    spill_loaded(&j->q, *cur);
    j->resume.stream_hash = hash;
    j->records_in++;
    j->bytes_in += (uint64_t)b->l_data + BAM_FIXED_BYTES;
    j->digest_in += digest;
    if ((j->records_in & PROGRESS_EVERY) == 0) report_reading(j);
    return 0;
}

/* A resumable sort stores its last batch too, and notes that the input
 * is complete: killed during the readout, a rerun needs no input. */
static int store_last_batch(sort_job *j, batch **cur)
{
    *cur = hand_over(j, *cur);
    spill_stop(&j->q);
    if (!*cur) return j->q.failed ? spill_error(j) : -1;
    if (j->q.failed) return spill_error(j);
    return resume_progress_input_complete(j);
}

static batch_fill *start_filling(sort_job *j)
{
    batch_fill *fill = batch_fill_create(sort_plan_fill_pool(j));
    if (!fill) sort_job_fail("out of memory reading '%s'", j->in_fn);
    return fill;
}

/* Into an empty batch: its position is never journaled. */
static int take_first(sort_job *j, batch_fill *fill, batch **cur)
{
    if (!j->first) return 0;
    if (!bam_copy1(batch_fill_slot(fill), j->first))
        return sort_job_fail("out of memory reading '%s'", j->in_fn);
    return take_record(j, fill, cur);
}

/* ---- records parsed on the pool (load/record_parse.h) ---- */

/* The first record that failed, in input order, reported as it would be
 * had the loader read it. */
static int report_parse_failure(sort_job *j, const record_parse *p)
{
    const record_parse_failure *f = record_parse_failed(p);
    if (f->kind != RECORD_PARSE_MEMORY) j->records_in = f->seq;    /* the records before it */
    switch (f->kind) {
    case RECORD_PARSE_READ:
        sort_input_check_end(j, f->b, f->read_code);
        return -1;
    case RECORD_PARSE_REFS:
        sort_input_check_refs(j, f->b);
        return -1;
    case RECORD_PARSE_KEY:
        return sort_job_fail("'%s': %s", j->in_fn, f->err.msg);
    default:
        return sort_job_fail("out of memory reading '%s'", j->in_fn);
    }
}

/* A full batch: its spans settled, to the spill thread. */
static int hand_over_parsed(sort_job *j, record_parse *p, batch **cur)
{
    if (record_parse_settle(p) < 0) return report_parse_failure(j, p);
    if (!j->size_planned)
        sort_plan_from_input(j, *cur, sort_inputs_consumed(j), sort_inputs_total(j));
    if (!(*cur = hand_over(j, *cur))) return j->q.failed ? spill_error(j) : -1;
    return 0;
}

/* The chunk's records into batches, span by span. */
static int place_chunk(sort_job *j, record_parse *p, const record_parse_chunk *c, batch **cur)
{
    for (size_t at = 0; at < c->n;) {
        batch_span span;
        int r = batch_reserve_span(*cur, c->bound + at, c->n - at, 0, &span);
        if (r == BATCH_UNSETTLED) {
            if (record_parse_settle(p) < 0) return report_parse_failure(j, p);
            r = batch_reserve_span(*cur, c->bound + at, c->n - at, 1, &span);
        }
        if (r < 0) return sort_job_fail("out of memory reading '%s'", j->in_fn);
        if (r == 0) {
            if (hand_over_parsed(j, p, cur) < 0) return -1;
            continue;
        }
        if (record_parse_span(p, *cur, &span, at, j->records_in) < 0)
            return report_parse_failure(j, p);
        spill_loaded(&j->q, *cur);
        uint64_t before = j->records_in;
        j->records_in += span.n;
        at += span.n;
        if ((before | PROGRESS_EVERY) < (j->records_in | PROGRESS_EVERY)) report_reading(j);
    }
    return 0;
}

/* The input's end, once every record is settled: as sort_input_check_end()
 * finds it after the last record read. */
static int end_parsed(sort_job *j, record_parse *p, int end)
{
    if (record_parse_settle(p) < 0) return report_parse_failure(j, p);
    j->digest_in += record_parse_digest(p);
    if (record_parse_placed(p)) sort_key_set_placed(&j->sort);
    bam1_t *b = bam_init1();
    if (!b) return sort_job_fail("out of memory reading '%s'", j->in_fn);
    int r = end < 0 ? -2 : record_parse_tail(p, b);
    spill_input_ended(&j->q);
    report_reading(j);
    int ret = sort_input_check_end(j, b, r);
    bam_destroy1(b);
    return ret;
}

/* The rest of the input, its records parsed on the pool: 0 at its end, or
 * -1 once the failure is reported. */
static int load_parsed(sort_job *j, batch **cur)
{
    record_parse_setup s = { .pool = j->pool.pool, .spec = &j->sort, .n_refs = j->n_refs,
                             .verify = j->o->verify, .jobs = sort_plan_parse_jobs(j) };
    record_parse *p = record_parse_create(&s);
    if (!p) return sort_job_fail("out of memory reading '%s'", j->in_fn);
    record_parse_chunk c;
    int ret;
    do {
        if (record_parse_read(p, j->in->fp.bgzf, &c) < 0) {
            ret = sort_job_fail("out of memory reading '%s'", j->in_fn);
            break;
        }
        ret = place_chunk(j, p, &c, cur);
        j->bytes_in += c.bytes;
    } while (ret == 0 && !c.end);
    if (ret == 0) ret = end_parsed(j, p, c.end);
    record_parse_free(p);
    return ret;
}

/* ---- records parsed here ---- */

static int load_here(sort_job *j, batch_fill *fill, batch **cur)
{
    int r;
    for (;;) {
        if (j->resume.on) j->resume.pos_before = resume_progress_position(j);
        if ((r = sort_inputs_read(j, batch_fill_slot(fill))) < 0) break;
        if (take_record(j, fill, cur) < 0) return -1;
    }
    batch_fill_settle(fill);
    spill_input_ended(&j->q);
    report_reading(j);
    return sort_input_check_end(j, batch_fill_slot(fill), r);
}

int sort_load_input(sort_job *j)
{
    double t0 = now_seconds();
    j->resume.load_started = t0;
    batch *cur = batch_create(sort_plan_batch_bytes(j->o));
    batch_fill *fill = NULL;
    int ret = 0;
    if (!cur) {
        sort_job_fail("out of memory reading '%s'", j->in_fn);
        ret = -1;
        goto done;
    }
    if (sort_input_start_threads(j) < 0 || start_spiller(j) < 0 || !(fill = start_filling(j))
        || take_first(j, fill, &cur) < 0) {
        ret = -1;
        goto done;
    }
    batch_fill_settle(fill);    /* a parsed load adds nothing more through the fill */
    if ((sort_plan_parse_jobs(j) ? load_parsed(j, &cur) : load_here(j, fill, &cur)) < 0) {
        ret = -1;
        goto done;
    }
    if (j->resume.on && store_last_batch(j, &cur) < 0) { ret = -1; goto done; }
    /* Otherwise the last batch never goes to disk: the readout merges it
     * from memory (an input that fits in one batch is sorted without temp
     * I/O). */
    spill_sort(&j->q, cur);
    batch_drop_scratch(cur);    /* the readout only reads it */
    j->tail = cur;
    cur = NULL;
    spill_stop(&j->q);
    if (j->q.failed) ret = spill_error(j);
done:
    batch_fill_free(fill);  /* before cur goes: its jobs may touch it */
    spill_stop(&j->q);      /* so may the spill thread */
    batch_destroy(cur);
    j->t_load = now_seconds() - t0;
    return ret;
}
