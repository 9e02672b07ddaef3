/* store/store_state.c -- a resumable store: its journal.  See store/store_state.h
 * and store/state_dir.h (the directory and its first record).
 *
 * The journal's records: 'S' (the state's version, then the identity, the
 * codec and the parts: the first record, written before the database
 * exists), 'R' (a run: its part, its entries and
 * bytes, its groups' key spans and its samples, and the caller's note), 'K' (a
 * blob the caller keeps) and 'C' (the input is complete, with a note).  A
 * run is journaled before RocksDB takes it in, so the database never holds
 * a run the journal lacks; the last journaled run may be missing from it,
 * and is then taken in from its file if the file is still there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "store/store_db_internal.h"
#include "store/store_state.h"
#include "util/byte_io.h"
#include "util/cleanup.h"
#include "store/state_dir.h"

enum { REC_START = STATE_REC_START, REC_RUN = STATE_REC_RUN, REC_KEEP = 'K', REC_DONE = STATE_REC_DONE };

/* The directory holds a state or nothing (store/state_dir.h), and exists:
 * created if missing. */
static int check_dir(const char *dir, errmsg *err)
{
    if (state_dir_usable(dir, err) < 0) return -1;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return errmsg_set(err, "cannot create the state directory '%s': %s", dir, strerror(errno));
    return 0;
}

static void reset_runs(rocks_store *st)
{
    if (st->index) {
        run_index_destroy(st->index);
        st->index = run_index_create();
    }
    key_samples_free_copies(&st->samples);
    st->runs = st->bytes_written = st->dbs[0].runs = 0;
    st->parts_used = 0;
    memset(&st->resume, 0, sizeof st->resume);
    st->resume.discarded = st->discarded;
    for (int s = 0; s < STORE_KEEP_SLOTS; s++) {
        st->resume.kept[s] = st->kept_blob[s];
        st->resume.kept_len[s] = st->kept_blob_len[s];
    }
}

/* A 'K' record's blob, copied out of the journal, whose buffer moves as
 * records are appended.  -1 if it does not parse or memory runs out. */
static int copy_kept(rocks_store *st, byte_reader *r)
{
    size_t len;
    uint64_t slot = br_u64(r);
    const uint8_t *blob = br_bytes(r, &len);
    uint8_t *copy = r->bad || slot >= STORE_KEEP_SLOTS ? NULL : malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, blob, len);
    free(st->kept_blob[slot]);
    st->kept_blob[slot] = copy;
    st->kept_blob_len[slot] = len;
    st->resume.kept[slot] = copy;
    st->resume.kept_len[slot] = len;
    return 0;
}

/* A discarded state's kept blobs outlive it: what they name (the output a
 * killed run left half written) is still there for the caller to remove. */
static void salvage_kept(rocks_store *st)
{
    for (size_t i = 1; i < run_journal_records(st->journal); i++) {
        size_t len;
        const uint8_t *rec = run_journal_record(st->journal, i, &len);
        byte_reader r = br_of(rec, len);
        if (br_u64(&r) == REC_KEEP) copy_kept(st, &r);
    }
}

/* The identity of a fresh state, journaled before its database is made. */
static int journal_start(rocks_store *st, const store_options *o, errmsg *err)
{
    byte_writer w = { 0 };
    state_dir_start_write(&w, o->identity, (uint64_t)o->compression, (uint64_t)st->n_parts);
    int r = w.failed ? errmsg_set(err, "out of memory") : run_journal_append(st->journal, w.p, w.n, err);
    bw_free(&w);
    return r;
}

int store_state_wipe(rocks_store *st, const store_options *o, errmsg *err)
{
    salvage_kept(st);
    cleanup_remove_path(st->dbs[0].dir);
    reset_runs(st);
    if (run_journal_cut(st->journal, 0, err) < 0) return -1;
    return journal_start(st, o, err);
}

void store_state_discard(rocks_store *st, const char *why)
{
    free(st->discarded);
    st->discarded = strdup(why);
    st->resume.discarded = st->discarded;
}

int store_state_keep_other(rocks_store *st, const store_options *o, const char *why, errmsg *err)
{
    errmsg_set(err, "%s", why ? why : "it does not add up");   /* why may be st->discarded */
    free(st->discarded);
    st->discarded = NULL;
    st->resume.discarded = NULL;
    *o->state_other = 1;
    return -1;
}

/* Why two identities differ, for the line that discards a state: the name
 * (up to its first space) of their first line that differs, such as
 * "inode" for an input file replaced by a copy; an input option's whole
 * line ("input option decode_md=0"): its first word would blame the input. */
#define INPUT_OPTION "input option "

static const char *another_sort(const uint8_t *old, size_t old_len, const char *now,
                                char *why, size_t size)
{
    size_t at = 0, now_len = strlen(now);
    while (at < now_len && at < old_len && now[at] == (char)old[at]) at++;
    while (at && now[at - 1] != '\n') at--;
    const char *line = at < now_len ? now + at : (const char *)old + at;
    size_t left = at < now_len ? now_len - at : old_len - at, name = 0;
    int option = left > strlen(INPUT_OPTION) && !strncmp(line, INPUT_OPTION, strlen(INPUT_OPTION));
    while (name < left && (option || line[name] != ' ') && line[name] != '\n') name++;
    snprintf(why, size, "it is the state of another sort (the input or an option that orders "
             "the records changed: its '%.*s' differs)", (int)name, line);
    return why;
}

/* The 'S' record's identity against this run's: a reason to start afresh
 * (in why, if it needs room), or NULL. */
static const char *other_sort(rocks_store *st, const store_options *o, char *why, size_t size)
{
    size_t len;
    const uint8_t *rec = run_journal_record(st->journal, 0, &len);
    state_start s;
    state_dir_start_read(rec, len, &s);
    if (s.type != REC_START) return "its journal is damaged";
    if (s.version != STORE_STATE_VERSION) return "it was written by another version of rocksort";
    if (s.bad) return "its journal is damaged";
    if (s.identity_len != strlen(o->identity) || memcmp(s.identity, o->identity, s.identity_len))
        return another_sort(s.identity, s.identity_len, o->identity, why, size);
    if (s.codec != (uint64_t)o->compression || s.parts != (uint64_t)st->n_parts)
        return "it holds runs of another format (--temp-compression changed)";
    return NULL;
}

int store_state_prepare(rocks_store *st, const store_options *o, errmsg *err)
{
    if (!(st->state_dir = strdup(o->state_dir))) return errmsg_set(err, "out of memory");
    if (check_dir(st->state_dir, err) < 0) return -1;
    /* Without a descriptor to spare, it is removed by its path. */
    st->state_fd = open(st->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *path = state_dir_join(st->state_dir, STATE_JOURNAL_NAME);
    st->dbs[0].dir = state_dir_join(st->state_dir, STATE_DB_NAME);
    st->dbs[0].weight = 1;
    st->n_dbs = 1;
    if (!path || !st->dbs[0].dir) {
        free(path);
        return errmsg_set(err, "out of memory");
    }
    st->journal = run_journal_open(path, err);
    free(path);
    if (!st->journal) return -1;
    st->state_owned = 1;
    st->n_parts = o->parts < 1 ? 1 : o->parts > STORE_DB_MAX_PARTS ? STORE_DB_MAX_PARTS : o->parts;
    char other[256];
    const char *why = run_journal_records(st->journal) ? other_sort(st, o, other, sizeof other) : NULL;
    if (!why && run_journal_records(st->journal)) why = o->state_stale;
    if (why && o->state_other) return store_state_keep_other(st, o, why, err);
    if (why) store_state_discard(st, why);
    return why || !run_journal_records(st->journal) ? store_state_wipe(st, o, err) : 0;
}

/* The run's groups (compact runs) and samples, as 'R' holds them. */
static void write_run_keys(rocks_store *st, byte_writer *w)
{
    size_t groups = st->index ? run_index_open_groups(st->index) : 0;
    bw_u64(w, groups);
    for (size_t i = 0; i < groups; i++) {
        const uint8_t *first, *last;
        size_t first_len, last_len;
        run_index_open_span(st->index, i, &first, &first_len, &last, &last_len);
        bw_bytes(w, first, first_len);
        bw_bytes(w, last, last_len);
    }
    const key_samples *s = &st->samples;
    bw_u64(w, s->n - st->run_first_sample);
    for (size_t i = st->run_first_sample; i < s->n; i++) {
        bw_bytes(w, s->v[i].key, s->v[i].len);
        bw_u64(w, s->v[i].weight);
    }
}

int store_state_journal_run(rocks_store *st, int part, uint64_t bytes, const void *note,
                            size_t note_len, errmsg *err)
{
    byte_writer w = { 0 };
    bw_u64(&w, REC_RUN);
    bw_u64(&w, (uint64_t)part);
    bw_u64(&w, st->run_entries);
    bw_u64(&w, bytes);
    write_run_keys(st, &w);
    bw_bytes(&w, note, note_len);
    int r = w.failed ? errmsg_set(err, "out of memory") : run_journal_append(st->journal, w.p, w.n, err);
    bw_free(&w);
    return r;
}

/* One journaled run, taken back into the index, the samples and the
 * counts.  Returns -1 if the record does not parse. */
static int restore_run(rocks_store *st, byte_reader *r, int *part, uint64_t *entries)
{
    *part = (int)br_u64(r);
    *entries = br_u64(r);
    uint64_t bytes = br_u64(r), n = br_u64(r);
    size_t len, len2;
    for (uint64_t i = 0; i < n && !r->bad; i++) {
        const uint8_t *first = br_bytes(r, &len), *last = br_bytes(r, &len2);
        if (!r->bad && (!st->index || run_index_add_group(st->index, first, len, last, len2) < 0))
            return -1;
    }
    n = br_u64(r);
    for (uint64_t i = 0; i < n && !r->bad; i++) {
        const uint8_t *key = br_bytes(r, &len);
        uint64_t weight = br_u64(r);
        if (!r->bad && key_samples_add_copy(&st->samples, key, len, weight) < 0) return -1;
    }
    st->resume.note = br_bytes(r, &st->resume.note_len);
    if (r->bad || *part < 0 || *part >= st->n_parts) return -1;
    if (st->index && run_index_end_run(st->index, *part) < 0) return -1;
    if (*part >= st->parts_used) st->parts_used = *part + 1;
    st->runs++;
    st->dbs[0].runs++;
    st->bytes_written += bytes;
    return 0;
}

/* The keys RocksDB holds in each part: every run's entries, merged or not
 * (keys are unique, so a merge keeps them all).  From the table
 * properties of every file: the live-file list's counts come only from
 * the files RocksDB happened to open. */
static int db_entries(rocks_store *st, uint64_t *have)
{
    static const char field[] = "# entries=";
    for (int p = 0; p < st->n_parts; p++) {
        char *v = rocksdb_property_value_cf(part_db(st, p), st->part[p],
                                            "rocksdb.aggregated-table-properties");
        const char *at = v ? strstr(v, field) : NULL;
        char *end = NULL;
        if (at) have[p] = strtoull(at + sizeof field - 1, &end, 10);
        free(v);
        if (!at || end == at + sizeof field - 1) return -1;
    }
    return 0;
}

/* The runs the journal promises, per part; the last one's record index,
 * part and entries.  -1 if a record does not parse. */
static int journal_entries(rocks_store *st, uint64_t *want, size_t *last, int *last_part,
                           uint64_t *last_entries)
{
    for (size_t i = 1; i < run_journal_records(st->journal); i++) {
        size_t len;
        const uint8_t *rec = run_journal_record(st->journal, i, &len);
        byte_reader r = br_of(rec, len);
        uint64_t type = br_u64(&r);
        if (type != REC_RUN) continue;
        uint64_t part = br_u64(&r), entries = br_u64(&r);
        if (r.bad || part >= (uint64_t)st->n_parts) return -1;
        want[part] += entries;
        *last = i;
        *last_part = (int)part;
        *last_entries = entries;
    }
    return 0;
}

/* The last journaled run, killed between its journal record and RocksDB
 * taking it in: taken in now from its file, or forgotten (its records are
 * then read again) if the file is gone or RocksDB refuses it: an ingestion
 * cut short may already have written its sequence number into the file,
 * which a second ingestion rejects.  0, or -1 with the cause in err. */
static int take_in_last_run(rocks_store *st, size_t last, int part, errmsg *err)
{
    size_t n_runs = 0;
    for (size_t i = 1; i < last; i++) {
        size_t len;
        const uint8_t *rec = run_journal_record(st->journal, i, &len);
        byte_reader r = br_of(rec, len);
        n_runs += br_u64(&r) == REC_RUN;
    }
    char *path = NULL;
    if (asprintf(&path, "%s/run-%06zu.sst", st->dbs[0].dir, n_runs) < 0)
        return errmsg_set(err, "out of memory");
    char *rerr = NULL;
    int there = access(path, F_OK) == 0;
    if (there) {
        const char *files[1] = { path };
        rocksdb_ingest_external_file_cf(part_db(st, part), st->part[part], files, 1, st->ingest,
                                        &rerr);
    }
    int taken = there && !rerr;
    free(rerr);
    unlink(path);
    free(path);
    return taken ? 0 : run_journal_cut(st->journal, last, err);
}

/* Whether the database holds exactly the journaled runs; takes in, or
 * forgets, a last run that a kill cut off.  0 yes, 1 no, -1 error. */
static int check_runs(rocks_store *st, errmsg *err)
{
    uint64_t want[STORE_MAX_PARTS] = { 0 }, have[STORE_MAX_PARTS] = { 0 }, last_entries = 0;
    size_t last = 0;
    int last_part = -1;
    if (journal_entries(st, want, &last, &last_part, &last_entries) < 0 || db_entries(st, have) < 0)
        return 1;
    for (int p = 0; p < st->n_parts; p++) {
        if (have[p] == want[p]) continue;
        if (p != last_part || have[p] + last_entries != want[p]) return 1;
        int r = take_in_last_run(st, last, p, err);
        if (r) return r;
    }
    return 0;
}

/* Run files no run needs any more: written when a kill came, or left
 * behind by RocksDB's move of a run into the database. */
static void remove_leftovers(rocks_store *st)
{
    DIR *d = opendir(st->dbs[0].dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, "run-", 4)) continue;
        char *p = state_dir_join(st->dbs[0].dir, e->d_name);
        if (p) unlink(p);
        free(p);
    }
    closedir(d);
}

/* Takes the journaled runs back into the index, samples and counts. */
static int replay(rocks_store *st)
{
    for (size_t i = 1; i < run_journal_records(st->journal); i++) {
        size_t len;
        const uint8_t *rec = run_journal_record(st->journal, i, &len);
        byte_reader r = br_of(rec, len);
        int part;
        uint64_t entries;
        switch (br_u64(&r)) {
        case REC_RUN:
            if (restore_run(st, &r, &part, &entries) < 0) return -1;
            break;
        case REC_KEEP:
            if (copy_kept(st, &r) < 0) return -1;
            break;
        case REC_DONE:
            st->resume.complete = 1;
            st->resume.note = br_bytes(&r, &st->resume.note_len);
            break;
        default:
            return -1;
        }
        if (r.bad || r.at != len) return -1;
    }
    return 0;
}

/* The last note, copied out of the journal's buffer (see copy_kept()). */
static int own_note(rocks_store *st)
{
    if (!st->resume.note) return 0;
    uint8_t *copy = malloc(st->resume.note_len + 1);
    if (!copy) return -1;
    memcpy(copy, st->resume.note, st->resume.note_len);
    free(st->note_blob);
    st->note_blob = copy;
    st->resume.note = copy;
    return 0;
}

int store_state_restore(rocks_store *st, errmsg *err)
{
    int r = check_runs(st, err);
    if (r < 0) return -1;
    if (r > 0) {
        store_state_discard(st, "its database does not hold the runs its journal lists");
        return 1;
    }
    if (replay(st) < 0 || own_note(st) < 0) {
        store_state_discard(st, "its journal is damaged");
        return 1;
    }
    remove_leftovers(st);
    st->resume.runs = st->runs;
    return 0;
}

/* DIR goes, and so does the directory DIR names when it is a symbolic
 * link: removing the link alone would leave the journal behind.  That
 * directory held nothing but the state (store/state_dir.h).  It is removed
 * through its descriptor, wherever it was renamed to meanwhile, and the
 * link only if it still named it. */
static void remove_state_dir(rocks_store *st)
{
    const char *dir = st->state_dir;
    struct stat held, named;
    if (st->state_fd < 0) {
        char real[PATH_MAX];
        cleanup_remove_path(st->dbs[0].dir);
        if (realpath(dir, real)) cleanup_remove_path(real);
        cleanup_remove_path(dir);
        return;
    }
    int here = fstat(st->state_fd, &held) == 0 && stat(dir, &named) == 0
            && held.st_dev == named.st_dev && held.st_ino == named.st_ino;
    cleanup_remove_dir_at(st->state_fd, dir);
    if (here && lstat(dir, &named) == 0 && S_ISLNK(named.st_mode)) unlink(dir);
}

void store_state_close(rocks_store *st, int keep)
{
    run_journal_close(st->journal);
    st->journal = NULL;
    if (!keep && st->state_owned) remove_state_dir(st);
    if (st->state_fd >= 0) close(st->state_fd);
    st->state_fd = -1;
    free(st->state_dir);
    free(st->discarded);
    free(st->note_blob);
    for (int s = 0; s < STORE_KEEP_SLOTS; s++) free(st->kept_blob[s]);
}

const store_resume *store_state_resumed(const rocks_store *st) { return &st->resume; }
int store_state_unlocked(const rocks_store *st) { return st->journal ? run_journal_unlocked(st->journal) : 0; }

int store_state_moved(const rocks_store *st, char *now, size_t size)
{
    return st && cleanup_dir_moved(st->state_fd, st->state_dir, now, size);
}

/* A record of a type, a slot (REC_KEEP only) and a blob. */
static int append_blob(rocks_store *st, uint64_t type, int slot, const void *blob, size_t len,
                       errmsg *err)
{
    if (!st->journal) return 0;
    byte_writer w = { 0 };
    bw_u64(&w, type);
    if (type == REC_KEEP) bw_u64(&w, (uint64_t)slot);
    bw_bytes(&w, blob, len);
    int r = w.failed ? errmsg_set(err, "out of memory") : run_journal_append(st->journal, w.p, w.n, err);
    bw_free(&w);
    return r;
}

int store_state_keep(rocks_store *st, int slot, const void *blob, size_t len, errmsg *err)
{
    return append_blob(st, REC_KEEP, slot, blob, len, err);
}

int store_state_complete(rocks_store *st, const void *note, size_t note_len, errmsg *err)
{
    return append_blob(st, REC_DONE, 0, note, note_len, err);
}
