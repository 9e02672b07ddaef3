/* engine/sort_inputs.c -- see engine/sort_inputs.h.
 *
 * Why every header is read before the first record: the output's header is
 * written before any record, and a header conflict, or a missing input,
 * found after hours of sorting would waste them.  Why the inputs are then
 * closed until their turn: a list of hundreds would otherwise hold as many
 * descriptors through the load, which the store's runs need.
 */
#include <stdlib.h>
#include <string.h>
#include "engine/sort_inputs.h"
#include "engine/sort_input.h"
#include "engine/resume_progress.h"
#include "engine/resume_recheck.h"
#include "load/header_merge.h"
#include "util/mix64.h"

#define HEADER_HASH_SEED 0x243f6a8885a308d3ULL

int sort_inputs_prepare_header(sort_job *j)
{
    errmsg err;
    j->sort = j->o->sort;
    if (sort_key_spec_prepare(&j->sort, j->hdr, &err) < 0)
        return sort_job_fail("%s (sorting '%s')", err.msg, j->in_fn);
    if (j->o->pg_cmdline &&
        sam_hdr_add_pg(j->hdr, "samtools", "VN", ROCKSORT_VERSION,
                       "CL", j->o->pg_cmdline, NULL) < 0)
        return sort_job_fail("failed to add a @PG line for '%s'", j->in_fn);
    /* The output header is this one: a record must fit it too. */
    if (sam_hdr_nref(j->hdr) < j->n_refs) j->n_refs = sam_hdr_nref(j->hdr);
    return 0;
}

static uint64_t header_hash(sam_hdr_t *h)
{
    const char *text = sam_hdr_str(h);
    return text ? mix64_bytes(HEADER_HASH_SEED, text, strlen(text)) : 0;
}

/* Input i opened; to be read now (not only for its header), a resumable
 * sort first notes its status for the recheck (engine/resume_recheck.h). */
static int open_input(sort_job *j, int i, int to_read)
{
    const char *fn = j->o->in_fns[i];
    if (to_read && j->resume.on) resume_recheck_open(j, fn);
    int r = sort_input_open(j, fn);
    if (r > 0) return sort_job_fail("'%s' is not a SAM, BAM or CRAM file", fn);
    if (r == 0) {
        j->inputs[i].file_size = j->in_file_size;
        j->inputs[i].header_hash = header_hash(j->in_hdr);
    }
    return r;
}

static int open_one(sort_job *j, int empty_ok)
{
    if (empty_ok) {
        int r = sort_input_open(j, j->o->in_fns[0]);
        if (r != 0) return r;
        j->inputs[0].file_size = j->in_file_size;
        j->inputs[0].header_hash = header_hash(j->in_hdr);
    } else if (open_input(j, 0, 1) < 0) {
        return -1;
    }
    j->hdr = j->in_hdr;
    return 0;
}

/* Each input's header into the merge; the first input held to be read,
 * a stream held until its turn, the others closed. */
static int open_several(sort_job *j, header_merge *m)
{
    held_input first = { 0 };
    errmsg err;
    int ret = 0;
    for (int i = 0; ret == 0 && i < j->o->n_in; i++) {
        ret = open_input(j, i, i == 0);
        if (ret == 0 && header_merge_add(m, j->in_hdr, j->in_fn, &err) < 0)
            ret = sort_job_fail("%s", err.msg);
        if (ret == 0 && i == 0) sort_input_hold(j, &first);
        else if (ret == 0 && !j->in_file_size) sort_input_hold(j, &j->inputs[i].held);
        else sort_input_close(j);
    }
    if (ret < 0) {
        sort_input_drop_held(&first);
        return -1;
    }
    j->hdr = header_merge_take(m);
    sort_input_take_up(j, &first);
    return 0;
}

int sort_inputs_open(sort_job *j, int empty_ok)
{
    if (!(j->inputs = calloc((size_t)j->o->n_in, sizeof *j->inputs)))
        return sort_job_fail("out of memory");
    int r;
    if (j->o->n_in == 1) {
        r = open_one(j, empty_ok);
    } else {
        header_merge *m = header_merge_new();
        r = m ? open_several(j, m) : sort_job_fail("out of memory");
        header_merge_free(m);
    }
    if (r != 0) return r;
    if (j->resume.on && !(j->resume.header_text = strdup(sam_hdr_str(j->hdr))))
        return sort_job_fail("out of memory reading '%s'", j->in_fn);
    if (j->resume.on) j->resume.kind = resume_progress_kind(j);
    return sort_inputs_prepare_header(j);
}

/* The input at j->input, made the one read: held, or opened again. */
static int open_turn(sort_job *j)
{
    sort_job_input *in = &j->inputs[j->input];
    if (in->held.in) {
        sort_input_take_up(j, &in->held);
    } else {
        uint64_t was = in->header_hash;
        if (open_input(j, j->input, 1) < 0) return -1;
        if (in->header_hash != was)
            return sort_job_fail("'%s' changed while the sort ran: its header is not the one read "
                                 "at the start", j->in_fn);
    }
    if (sam_hdr_nref(j->hdr) < j->n_refs) j->n_refs = sam_hdr_nref(j->hdr);
    if (j->resume.on) {
        j->resume.kind = resume_progress_kind(j);
        j->resume.pos_before = resume_progress_position(j);
    }
    return 0;
}

static int next_input(sort_job *j)
{
    sort_job_input *in = &j->inputs[j->input];
    in->records = j->records_in - j->input_first;
    if (j->resume.on) resume_recheck_input_done(j);
    sort_input_close(j);
    j->in_before += in->file_size;
    j->input++;
    j->input_first = j->records_in;
    if (open_turn(j) < 0) return -1;
    return sort_input_start_threads(j);
}

int sort_inputs_read(sort_job *j, bam1_t *b)
{
    for (;;) {
        int r = sort_input_read(j, b);
        if (r != -1 || j->input + 1 >= j->o->n_in) return r;
        if (sort_input_check_end(j, b, r) < 0 || next_input(j) < 0) return SORT_INPUT_REPORTED;
    }
}

int sort_inputs_read_first(sort_job *j)
{
    bam1_t *b = bam_init1();
    if (!b) return sort_job_fail("out of memory reading '%s'", j->in_fn);
    int r = sort_inputs_read(j, b);
    if (r >= 0 && sort_input_check_refs(j, b) == 0) {
        j->first = b;
        return 0;
    }
    int ret = r >= 0 ? -1 : r == -1 ? 0 : sort_input_check_end(j, b, r);
    bam_destroy1(b);
    return ret;
}

int sort_inputs_goto(sort_job *j, int k, uint64_t first)
{
    if (k == j->input) return 0;
    if (k < j->input || k >= j->o->n_in)
        return sort_job_fail("cannot resume at input %d of %d", k + 1, j->o->n_in);
    sort_input_close(j);
    resume_recheck_close(j);
    for (int i = j->input; i < k; i++) {
        j->in_before += j->inputs[i].file_size;
        j->inputs[i].taken_back = 1;
        sort_input_drop_held(&j->inputs[i].held);
    }
    j->input = k;
    j->input_first = first;
    return open_turn(j);
}

int64_t sort_inputs_consumed(const sort_job *j)
{
    int64_t at = j->in ? sort_input_offset(j) : -1;
    return at < 0 ? -1 : (int64_t)j->in_before + at;
}

uint64_t sort_inputs_total(const sort_job *j)
{
    uint64_t total = 0;
    for (int i = 0; j->inputs && i < j->o->n_in; i++) {
        if (!j->inputs[i].file_size) return 0;
        total += j->inputs[i].file_size;
    }
    return total;
}

uint64_t sort_inputs_records(const sort_job *j, int i)
{
    return i == j->input ? j->records_in - j->input_first : j->inputs[i].records;
}

void sort_inputs_close(sort_job *j)
{
    sort_input_close(j);
    for (int i = 0; j->inputs && i < j->o->n_in; i++) sort_input_drop_held(&j->inputs[i].held);
    free(j->inputs);
    j->inputs = NULL;
}
