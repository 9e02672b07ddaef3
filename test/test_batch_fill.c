/* test_batch_fill.c -- unit tests: batches filled on a pool (load/batch_fill.h)
 * hold exactly what batch_add() would put in them.
 *
 * Records of every kind (placed and not, short and long names, empty and
 * 400 kB sequences) are added as the loader adds them: each read into the
 * filler's slot, full batches settled, sorted, checked and cleared.  Each
 * batch must be a run of consecutive input records whose sorted keys and
 * values equal, byte for byte, those of the same records given to
 * batch_add() and sorted.  Small batches reach the arena replaced for a
 * record larger than the batch; large ones make the entries grow while
 * jobs are in flight.  -M changes records as they are added, so a record
 * finished twice would show.  Prints "N passed, M failed".
 */
#include <htslib/thread_pool.h>
#include "batch_records.h"
#include "load/batch_fill.h"
#include "unit_report.h"

/* Every record, as the loader adds them, in batches of `capacity` bytes. */
static const char *fill_all(hts_tpool *pool, sort_order order, size_t capacity)
{
    sort_spec spec;
    sort_key_spec_init(&spec, order);
    batch_fill *fill = batch_fill_create(pool);
    batch *cur = batch_create(capacity);
    if (!fill || !cur) return "cannot start";
    const char *why = NULL;
    size_t from = 0, batches = 0;
    errmsg err;
    for (size_t i = 0; i < N_RECORDS && !why; i++) {
        int r;
        if (!bam_copy1(batch_fill_slot(fill), recs[i])) why = "out of memory";
        while (!why && (r = batch_fill_add(fill, cur, &spec, i, &err)) == 0) {
            batch_fill_settle(fill);
            why = check_batch(&spec, cur, from);
            from += batch_count(cur);
            batches++;
            batch_clear(cur);
        }
        if (!why && r < 0) {
            snprintf(problem, sizeof problem, "record %zu: %.200s", i, err.msg);
            why = problem;
        }
    }
    batch_fill_settle(fill);
    if (!why) why = check_batch(&spec, cur, from);
    if (!why && from + batch_count(cur) != N_RECORDS) why = "records went missing";
    if (!why && capacity < ((size_t)1 << 20) && batches < 10) why = "too few batches to test";
    batch_fill_free(fill);
    batch_destroy(cur);
    return why;
}

int main(void)
{
    hts_tpool *pool = hts_tpool_init(4);
    if (!pool) return 2;
    make_records();
    static const struct {
        const char *name;
        sort_order order;
    } orders[] = {
        { "coordinate", ORDER_COORDINATE },
        { "name_natural", ORDER_NAME_NATURAL },
        { "minimiser", ORDER_MINIMISER },
    };
    for (size_t o = 0; o < sizeof orders / sizeof *orders; o++) {
        char name[80];
        snprintf(name, sizeof name, "%s_small_batches_on_a_pool", orders[o].name);
        report(name, fill_all(pool, orders[o].order, (size_t)256 << 10));
        snprintf(name, sizeof name, "%s_large_batches_on_a_pool", orders[o].name);
        report(name, fill_all(pool, orders[o].order, (size_t)16 << 20));
        snprintf(name, sizeof name, "%s_without_a_pool", orders[o].name);
        report(name, fill_all(NULL, orders[o].order, (size_t)1 << 20));
    }
    free_records();
    hts_tpool_destroy(pool);
    return report_summary();
}
