/* store/state_dir.c -- see store/state_dir.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "store/state_dir.h"
#include "disk/run_journal.h"

char *state_dir_join(const char *dir, const char *name)
{
    char *p = NULL;
    return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

void state_dir_start_write(byte_writer *w, const char *identity, uint64_t codec, uint64_t parts)
{
    bw_u64(w, STATE_REC_START);
    bw_u64(w, STORE_STATE_VERSION);
    bw_bytes(w, identity, strlen(identity));
    bw_u64(w, codec);
    bw_u64(w, parts);
}

void state_dir_start_read(const uint8_t *rec, size_t len, state_start *s)
{
    byte_reader r = br_of(rec, len);
    s->type = br_u64(&r);
    s->version = br_u64(&r);
    s->identity = br_bytes(&r, &s->identity_len);
    s->codec = br_u64(&r);
    s->parts = br_u64(&r);
    s->bad = r.bad || r.at != len;
}

static int refuse_dir(const char *dir, const char *why, errmsg *err)
{
    return errmsg_set(err, "--resume '%s' holds files that are not a rocksort state%s%s%s: "
                      "refusing to use it (give a new or empty directory)", dir,
                      why ? " (" : "", why ? why : "", why ? ")" : "");
}

/* A journal is a state's when its first record is an 'S' of any version,
 * or when it is empty and no database sits beside it: 'S' is written
 * before the database is made.  Anything else is the user's, and stays. */
static int owned_journal(const char *dir, int has_db, errmsg *err)
{
    char *path = state_dir_join(dir, STATE_JOURNAL_NAME);
    uint8_t *rec = NULL;
    size_t len = 0;
    errmsg why;
    int r = path ? run_journal_first_record(path, &rec, &len, &why) : -1;
    state_start start = { 0 };
    if (r > 0) state_dir_start_read(rec, len, &start);
    free(rec);
    if (!path) return errmsg_set(err, "out of memory");
    free(path);
    if (r < 0) return refuse_dir(dir, why.msg, err);
    if (r == 0 && has_db) return refuse_dir(dir, "an empty journal beside a database", err);
    return r == 0 || start.type == STATE_REC_START ? 0 : refuse_dir(dir, NULL, err);
}

/* The directory, if it exists, holds nothing but a state's journal and
 * database: anything else is the user's, and stays. */
int state_dir_usable(const char *dir, errmsg *err)
{
    struct stat sb;
    if (stat(dir, &sb) < 0) return errno == ENOENT ? 0 : errmsg_set(err, "--resume '%s': %s", dir,
                                                                     strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return errmsg_set(err, "--resume '%s' is not a directory", dir);
    DIR *d = opendir(dir);
    if (!d) return errmsg_set(err, "cannot read the state directory '%s': %s", dir, strerror(errno));
    int journal = 0, foreign = 0, db = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        /* A FIFO or a link under a state's names is not one: reading it could hang. */
        int kind = fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0
                 ? (int)(sb.st_mode & S_IFMT) : -1;
        if (!strcmp(e->d_name, STATE_JOURNAL_NAME) && kind == S_IFREG) journal = 1;
        else if (!strcmp(e->d_name, STATE_DB_NAME) && kind == S_IFDIR) db = 1;
        else foreign = 1;
    }
    closedir(d);
    if (foreign || (db && !journal)) return refuse_dir(dir, NULL, err);
    return journal ? owned_journal(dir, db, err) : 0;
}

/* Bytes of the regular files directly in dir. */
static uint64_t dir_bytes(const char *dir)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat sb;
        char *p = state_dir_join(dir, e->d_name);
        if (p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) sum += (uint64_t)sb.st_size;
        free(p);
    }
    closedir(d);
    return sum;
}

int state_dir_peek(const char *dir, store_codec *codec, uint64_t *bytes)
{
    errmsg ignored;
    char *path = state_dir_join(dir, STATE_JOURNAL_NAME), *db = state_dir_join(dir, STATE_DB_NAME);
    uint8_t *rec = NULL;
    size_t len = 0;
    state_start start = { 0 };
    if (path && db && state_dir_usable(dir, &ignored) == 0 &&
        run_journal_first_record(path, &rec, &len, &ignored) > 0)
        state_dir_start_read(rec, len, &start);
    int found = start.type == STATE_REC_START && start.version == STORE_STATE_VERSION && !start.bad &&
                start.codec <= STORE_CODEC_PLAIN;
    if (found) {
        *codec = (store_codec)start.codec;
        *bytes = dir_bytes(db);
    }
    free(rec);
    free(path);
    free(db);
    return found ? 0 : -1;
}

int state_dir_identity(const char *dir, char **identity)
{
    errmsg ignored;
    char *path = state_dir_join(dir, STATE_JOURNAL_NAME);
    uint8_t *rec = NULL;
    size_t len = 0;
    *identity = NULL;
    if (!path) return -1;
    int r = access(path, F_OK) == 0 ? run_journal_first_record(path, &rec, &len, &ignored) : 0;
    free(path);
    state_start start = { 0 };
    if (r > 0) state_dir_start_read(rec, len, &start);
    if (start.type == STATE_REC_START && start.version == STORE_STATE_VERSION && !start.bad)
        *identity = strndup((const char *)start.identity, start.identity_len);
    free(rec);
    return *identity ? 1 : r == 0 ? 0 : -1;
}

/* Past an 'R' record's fields before its note, as store_state_journal_run()
 * writes them: part, entries, bytes, the groups' key spans, the samples. */
static void skip_run_fields(byte_reader *r)
{
    size_t len;
    for (int i = 0; i < 3; i++) br_u64(r);
    for (uint64_t i = 0, n = br_u64(r); i < n && !r->bad; i++) {
        br_bytes(r, &len);
        br_bytes(r, &len);
    }
    for (uint64_t i = 0, n = br_u64(r); i < n && !r->bad; i++) {
        br_bytes(r, &len);
        br_u64(r);
    }
}

int state_dir_last_note(const char *dir, uint8_t **note, size_t *len)
{
    errmsg ignored;
    char *path = state_dir_join(dir, STATE_JOURNAL_NAME);
    run_journal *jr = path ? run_journal_read(path, &ignored) : NULL;
    free(path);
    if (!jr) return -1;
    const uint8_t *last = NULL;
    int bad = 0;
    for (size_t i = 1; i < run_journal_records(jr) && !bad; i++) {
        size_t n;
        const uint8_t *rec = run_journal_record(jr, i, &n);
        byte_reader r = br_of(rec, n);
        uint64_t type = br_u64(&r);
        if (type != STATE_REC_RUN && type != STATE_REC_DONE) continue;
        if (type == STATE_REC_RUN) skip_run_fields(&r);
        const uint8_t *p = br_bytes(&r, &n);
        bad = r.bad || r.at != r.n;
        if (!bad) {
            last = p;
            *len = n;
        }
    }
    *note = last && !bad ? malloc(*len + 1) : NULL;
    if (*note) memcpy(*note, last, *len);
    run_journal_close(jr);
    return bad || (last && !*note) ? -1 : last ? 1 : 0;
}
