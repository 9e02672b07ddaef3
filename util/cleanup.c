/* util/cleanup.c -- see util/cleanup.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/cleanup.h"
#include "util/clock_util.h"
#include "util/grow_array.h"
#include "util/thread.h"

/* A directory whose files background threads may still be creating is
 * emptied and removed up to this many times, this far apart. */
#define REMOVE_ATTEMPTS 20
#define REMOVE_RETRY_US 10000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Taken before lock, by the signal thread and by cleanup_hold_signals(). */
static pthread_mutex_t setup = PTHREAD_MUTEX_INITIALIZER;

/* A registered path.  A directory is held open too: renamed meanwhile (it
 * or a directory above it, such as -T's), it is still found and removed. */
typedef struct {
    char *path;
    int dir_fd;         /* -1: none */
} registered;

/* Registered paths; a forgotten one leaves a NULL slot for reuse.  The table
 * grows as needed: a path that could not be registered is never kept. */
static registered *paths;
static size_t n_paths;
static volatile sig_atomic_t interrupted;
/* The signal the signal thread took, until it proves to be late. */
static atomic_int arriving;
static atomic_int watching;     /* the signal thread runs */
static void (*_Atomic say_on_signal)(int sig);
static int finished;    /* the output is in place: the run has succeeded */

/* -> 0, or -1 with errno ENOMEM and nothing registered. */
static int add_locked(const char *path, int dir_fd)
{
    size_t slot = 0;
    while (slot < n_paths && paths[slot].path) slot++;
    if (slot == n_paths) {
        size_t old = n_paths;
        if (grow_array((void **)&paths, &n_paths, old + 1, sizeof *paths) < 0) return -1;
        memset(paths + old, 0, (n_paths - old) * sizeof *paths);
    }
    paths[slot].path = strdup(path);
    paths[slot].dir_fd = dir_fd;
    return paths[slot].path ? 0 : -1;
}

/* The signal thread takes the lock before it removes anything, so holding
 * it from creation to registration closes the window between the two.  A
 * path that cannot be registered is removed again: nothing is created that
 * a signal would leave behind. */
char *cleanup_mkdtemp(char *tmpl)
{
    pthread_mutex_lock(&lock);
    char *dir = mkdtemp(tmpl);
    /* Without a descriptor to spare, it is removed by its path. */
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dir && add_locked(dir, fd) < 0) {
        if (fd >= 0) close(fd);
        rmdir(dir);
        dir = NULL;
        errno = ENOMEM;
    }
    pthread_mutex_unlock(&lock);
    return dir;
}

int cleanup_mkdir(const char *path)
{
    pthread_mutex_lock(&lock);
    int made = mkdir(path, 0700);
    int saved = errno;
    int fd = made == 0 ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (made == 0 && add_locked(path, fd) < 0) {
        if (fd >= 0) close(fd);
        rmdir(path);
        made = -1;
        saved = ENOMEM;
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return made;
}

/* A file just created (fd, or -1) and registered under the lock taken
 * before its creation; one that cannot be registered is removed again. */
static int registered_file(int fd, const char *path)
{
    int saved = errno;
    if (fd >= 0 && add_locked(path, -1) < 0) {
        close(fd);
        unlink(path);
        fd = -1;
        saved = ENOMEM;
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return fd;
}

int cleanup_mkstemp(char *tmpl)
{
    pthread_mutex_lock(&lock);
    return registered_file(mkstemp(tmpl), tmpl);
}

int cleanup_create(const char *path)
{
    pthread_mutex_lock(&lock);
    return registered_file(open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600), path);
}

void cleanup_forget(const char *path)
{
    if (!path) return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_paths; i++)
        if (paths[i].path && !strcmp(paths[i].path, path)) {
            free(paths[i].path);
            if (paths[i].dir_fd >= 0) close(paths[i].dir_fd);
            paths[i] = (registered){ NULL, -1 };
        }
    pthread_mutex_unlock(&lock);
}

/* Unlinks the entries of the directory open as dir_fd: plain files, and
 * directories of plain files (a --resume state's database) when depth > 0. */
static void remove_dir_entries(int dir_fd, int depth)
{
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (unlinkat(dir_fd, e->d_name, 0) == 0 || errno != EISDIR || depth <= 0) continue;
        int sub = openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        remove_dir_entries(sub, depth - 1);
        close(sub);
        unlinkat(dir_fd, e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

/* The name under which parent holds the directory held: path's last part,
 * or, if that is another (the directory, or a symbolic link to it, was
 * renamed), the entry with its inode.  Returns 0 with the name in name. */
static int held_name(int parent, const struct stat *held, const char *path, char *name,
                     size_t size)
{
    const char *slash = strrchr(path, '/');
    snprintf(name, size, "%s", slash ? slash + 1 : path);
    struct stat named;
    if (fstatat(parent, name, &named, AT_SYMLINK_NOFOLLOW) == 0
        && held->st_dev == named.st_dev && held->st_ino == named.st_ino)
        return 0;
    int fd = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return -1;
    }
    int found = -1;
    for (struct dirent *e; found < 0 && (e = readdir(d)) != NULL;)
        if ((e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)
            && fstatat(parent, e->d_name, &named, AT_SYMLINK_NOFOLLOW) == 0
            && held->st_dev == named.st_dev && held->st_ino == named.st_ino) {
            snprintf(name, size, "%s", e->d_name);
            found = 0;
        }
    closedir(d);
    return found;
}

/* Removes the directory open as dir_fd, once named path, from the
 * directory it is in now: 0, or -1 while it is not empty. */
static int rmdir_held(int dir_fd, const char *path)
{
    int parent = openat(dir_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0) return 0;
    struct stat held;
    char name[NAME_MAX + 1];
    int r = fstat(dir_fd, &held) == 0 && held_name(parent, &held, path, name, sizeof name) == 0
          ? unlinkat(parent, name, AT_REMOVEDIR) : 0;
    close(parent);
    return r == 0 || (errno != ENOTEMPTY && errno != EEXIST) ? 0 : -1;
}

/* A directory whose files background threads may still be creating is
 * emptied and removed up to REMOVE_ATTEMPTS times; dir_fd is it, open, or
 * -1 to go by the path. */
static void remove_dir(const char *path, int dir_fd)
{
    for (int attempt = 0; attempt < REMOVE_ATTEMPTS; attempt++) {
        int fd = dir_fd >= 0 ? dir_fd : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return;
        remove_dir_entries(fd, 1);
        int r = dir_fd >= 0 ? rmdir_held(fd, path) : rmdir(path);
        if (fd != dir_fd) close(fd);
        if (r == 0) return;
        usleep(REMOVE_RETRY_US);
    }
}

static void remove_registered(const registered *p)
{
    if (p->dir_fd >= 0) {
        remove_dir(p->path, p->dir_fd);
        return;
    }
    struct stat st;
    if (lstat(p->path, &st) < 0) return;
    if (S_ISDIR(st.st_mode)) remove_dir(p->path, -1);
    else unlink(p->path);
}

int cleanup_dir_moved(int dir_fd, const char *path, char *now, size_t size)
{
    struct stat held, named;
    if (dir_fd < 0 || size < 2 || fstat(dir_fd, &held) < 0) return 0;
    if (stat(path, &named) == 0 && held.st_dev == named.st_dev && held.st_ino == named.st_ino)
        return 0;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dir_fd);
    ssize_t n = readlink(link, now, size - 1);
    if (n <= 0) return 0;
    now[n] = '\0';
    return 1;
}

/* The registered directory's descriptor, duplicated, or -1. */
static int held_fd_of(const char *path)
{
    int fd = -1;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; fd < 0 && i < n_paths; i++)
        if (paths[i].path && paths[i].dir_fd >= 0 && !strcmp(paths[i].path, path))
            fd = fcntl(paths[i].dir_fd, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_unlock(&lock);
    return fd;
}

int cleanup_registered_moved(const char *path, char *now, size_t size)
{
    int fd = held_fd_of(path);
    int moved = cleanup_dir_moved(fd, path, now, size);
    if (fd >= 0) close(fd);
    return moved;
}

void cleanup_remove_dir_at(int dir_fd, const char *path)
{
    remove_dir(path, dir_fd);
}

/* A registered directory is removed through a descriptor of its own: the
 * signal thread may remove it meanwhile, and its owner forget it. */
void cleanup_remove_path(const char *path)
{
    registered known = { (char *)path, held_fd_of(path) };
    remove_registered(&known);
    if (known.dir_fd >= 0) close(known.dir_fd);
}

/* The fatal signals that were not ignored when the process started: a
 * signal ignored then (SIGHUP under nohup, SIGINT in a script's background
 * job) stays ignored, as it does for samtools.  Set once, before the signal
 * thread starts. */
static sigset_t fatal_set;

static void fill_fatal_set(sigset_t *set)
{
    *set = fatal_set;
}

static void choose_fatal_signals(void)
{
    static const int fatal[] = { SIGINT, SIGTERM, SIGHUP };
    sigemptyset(&fatal_set);
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) {
        struct sigaction now;
        if (sigaction(fatal[i], NULL, &now) == 0 && now.sa_handler == SIG_IGN) continue;
        sigaddset(&fatal_set, fatal[i]);
    }
}

void cleanup_hold_signals(void) { pthread_mutex_lock(&setup); }
void cleanup_release_signals(void) { pthread_mutex_unlock(&setup); }

int cleanup_commit_rename(const char *from, const char *to)
{
    pthread_mutex_lock(&lock);
    int ret = rename(from, to);
    if (ret == 0) finished = 1;
    pthread_mutex_unlock(&lock);
    return ret;
}

void cleanup_mark_finished(void)
{
    pthread_mutex_lock(&lock);
    finished = 1;
    pthread_mutex_unlock(&lock);
}

/* Once the output is complete, undoing the run would lose a good result and
 * exiting 128+sig would report a failure that did not happen: a late signal
 * is noted and the few remaining steps (removing temp data) finish normally.
 * Returns holding the lock, with the first signal that came in time. */
static int wait_for_timely_signal(const sigset_t *set)
{
    int sig = 0;
    for (;;) {
        if (sigwait(set, &sig) != 0) return -1;
        arriving = sig;
        pthread_mutex_lock(&setup);
        pthread_mutex_lock(&lock);
        if (!finished) return sig;
        arriving = 0;
        pthread_mutex_unlock(&lock);
        pthread_mutex_unlock(&setup);
        fprintf(stderr, "samtools rocksort: signal %d (%s) arrived after the output was "
                "complete; finishing normally\n", sig, strsignal(sig));
    }
}

void cleanup_remove_all(void)
{
    /* The process is about to end: if a thread holds the lock, go on. */
    int locked = pthread_mutex_trylock(&lock) == 0;
    interrupted = 1;
    for (size_t i = 0; i < n_paths; i++)
        if (paths[i].path) remove_registered(&paths[i]);
    if (locked) pthread_mutex_unlock(&lock);
    void (*say)(int) = say_on_signal;
    if (say) say(0);
}

static void *signal_waiter(void *arg)
{
    (void)arg;
    sigset_t set;
    fill_fatal_set(&set);
    int sig = wait_for_timely_signal(&set);
    if (sig < 0) return NULL;
    interrupted = 1;
    for (size_t i = 0; i < n_paths; i++)
        if (paths[i].path) remove_registered(&paths[i]);
    void (*say)(int) = say_on_signal;
    if (say) say(sig);
    else fprintf(stderr, "samtools rocksort: interrupted by signal %d (%s); temporary data "
                 "removed\n", sig, strsignal(sig));
    _exit(128 + sig);
}

static int fatal_signal_pending(void)
{
    sigset_t pending, fatal;
    fill_fatal_set(&fatal);
    if (sigpending(&pending) != 0) return 0;
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&fatal, sig) == 1 && sigismember(&pending, sig) == 1) return 1;
    return 0;
}

int cleanup_signal_arrived(void)
{
    return interrupted || arriving || (watching && fatal_signal_pending());
}

/* The grace is measured on the clock, not in naps: on a loaded or
 * CPU-throttled machine a 1 ms nap can take tens of ms, and counted naps
 * once stretched a stream cut's refusal to seconds. */
int cleanup_signal_within(int ms)
{
    double until = now_seconds() + ms / 1000.0;
    while (!cleanup_signal_arrived()) {
        if (now_seconds() >= until) return 0;
        usleep(1000);
    }
    return 1;
}

/* The signal thread ends the process, unless the signal came after the
 * commit. */
void cleanup_await_signal(void)
{
    while (watching && cleanup_signal_arrived()) {
        pthread_mutex_lock(&lock);
        int late = finished;
        pthread_mutex_unlock(&lock);
        if (late) return;
        usleep(REMOVE_RETRY_US);
    }
}

void cleanup_on_signal(void (*say)(int sig))
{
    say_on_signal = say;
}

int cleanup_start(void)
{
    sigset_t set;
    choose_fatal_signals();
    fill_fatal_set(&set);
    signal(SIGPIPE, SIG_IGN);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, signal_waiter, NULL) != 0) return -1;
    pthread_setname_np(t, THREAD_SIGNALS);
    pthread_detach(t);
    watching = 1;
    return 0;
}
