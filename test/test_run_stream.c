/* test_run_stream.c -- unit tests: the spilled runs read ahead on a thread.
 *
 * A store (store/store_run.h) in a fresh temp directory holds records with
 * 8-byte big-endian keys and values whose bytes follow from the key, dealt
 * over a few runs so that their order comes from RocksDB's merge; some
 * values are several chunks long.  Tiny chunks force a hand-over every few
 * records.  The stream must return every record once, in key order, with
 * its own bytes; an empty database gives an empty stream; closing a
 * stream whose reader is blocked on full chunks must return.  Prints
 * "N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/store.h"
#include "readout/run_stream.h"
#include "unit_report.h"

#define N_RECORDS 5000
#define CHUNK 4096
#define HUGE_EVERY 997      /* these values are 3 chunks long */

static size_t value_len(uint64_t seq)
{
    return seq % HUGE_EVERY == 5 ? 3 * CHUNK : seq % 301;
}

static uint8_t value_byte(uint64_t seq, size_t i) { return (uint8_t)(seq * 31 + i * 7); }

static void encode_key(uint64_t seq, uint8_t key[8])
{
    for (int i = 0; i < 8; i++) key[i] = (uint8_t)(seq >> (56 - 8 * i));
}

static uint64_t decode_key(const uint8_t *key)
{
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++) seq = seq << 8 | key[i];
    return seq;
}

#define N_RUNS 3             /* run r holds the records whose seq % N_RUNS == r */

typedef struct {
    rocks_store *st;
} test_db;

/* Each run must be written in key order, as the engine writes them. */
static int write_run(rocks_store *st, int run, int n_records, uint8_t *val)
{
    errmsg err;
    int ok = store_run_begin(st, &err) == 0;
    for (int s = run; ok && s < n_records; s += N_RUNS) {
        uint8_t key[8];
        encode_key((uint64_t)s, key);
        for (size_t i = 0; i < value_len((uint64_t)s); i++) val[i] = value_byte((uint64_t)s, i);
        ok = store_run_put(st, key, 8, val, value_len((uint64_t)s), &err) == 0;
    }
    ok = ok && store_run_end(st, NULL, 0, &err) == 0;
    return ok ? 0 : -1;
}

static int open_db(test_db *t, int n_records)
{
    store_dir place = { "/tmp/test_run_stream", 1 };
    store_options so = { .dirs = &place, .n_dirs = 1, .max_open_files = -1,
                         .background_threads = 1, .parts = 1 };
    errmsg err;
    t->st = store_open(&so, &err);
    if (!t->st) return -1;
    uint8_t *val = malloc(3 * CHUNK);
    int ret = val ? 0 : -1;
    for (int run = 0; n_records > 0 && run < N_RUNS && ret == 0; run++)
        ret = write_run(t->st, run, n_records, val);
    free(val);
    return ret;
}

static void close_db(test_db *t)
{
    store_close(t->st, 0);
}

static const char *check_record(const run_stream *s, uint64_t expect)
{
    size_t kl, vl;
    const uint8_t *k = run_stream_key(s, &kl), *v = run_stream_value(s, &vl);
    if (kl != 8 || decode_key(k) != expect) return "a key is missing or out of order";
    if (vl != value_len(expect)) return "a value has the wrong length";
    for (size_t i = 0; i < vl; i++)
        if (v[i] != value_byte(expect, i)) return "a value's bytes differ";
    return NULL;
}

/* Reads up to limit records (all if limit < 0); *n gets the count. */
static const char *read_stream(test_db *t, int limit, int *n)
{
    store_iter *it = store_iter_open_range(t->st, 0, CHUNK, NULL, 0, NULL, 0);
    run_stream *s = it ? run_stream_open(it, CHUNK, 2) : NULL;
    const char *problem = s ? NULL : "stream_open failed";
    *n = 0;
    for (; !problem && run_stream_valid(s) && (limit < 0 || *n < limit); run_stream_next(s))
        problem = check_record(s, (uint64_t)(*n)++);
    static errmsg err;
    if (!problem && limit < 0 && run_stream_status(s, &err) < 0) problem = err.msg;
    run_stream_close(s);
    store_iter_close(it);
    return problem;
}

static const char *every_record_in_order(void)
{
    test_db t = {0};
    if (open_db(&t, N_RECORDS) < 0) return "cannot create the test database";
    int n;
    const char *problem = read_stream(&t, -1, &n);
    if (!problem && n != N_RECORDS) problem = "records are lost";
    close_db(&t);
    return problem;
}

static const char *empty_store(void)
{
    test_db t = {0};
    if (open_db(&t, 0) < 0) return "cannot create the test database";
    int n;
    const char *problem = read_stream(&t, -1, &n);
    if (!problem && n != 0) problem = "an empty store gave records";
    close_db(&t);
    return problem;
}

static const char *closed_early(void)
{
    test_db t = {0};
    if (open_db(&t, N_RECORDS) < 0) return "cannot create the test database";
    int n;
    const char *problem = read_stream(&t, 10, &n);
    if (!problem && n != 10) problem = "fewer records than asked for";
    close_db(&t);
    return problem;
}

int main(void)
{
    report("stream_returns_every_record_in_order", every_record_in_order());
    report("stream_of_empty_store", empty_store());
    report("stream_closed_while_reader_waits", closed_early());
    return report_summary();
}
