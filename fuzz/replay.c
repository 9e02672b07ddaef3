/* replay.c -- runs a fuzz target over files, without libFuzzer.
 *
 * `replay FILE|DIR...` feeds each file to LLVMFuzzerTestOneInput, so seed
 * corpora and crash reproducers run as regression tests with any compiler.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open '%s'\n", path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;
    uint8_t chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n > cap) {
            cap = (len + n) * 2;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) abort();
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", len);
    free(buf);
    return 1;
}

static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) return 0;
    if (!S_ISDIR(st.st_mode)) return replay_file(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    int total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *p = NULL;
        if (asprintf(&p, "%s/%s", path, e->d_name) < 0) abort();
        int r = replay_path(p);
        free(p);
        if (r < 0) return -1;
        total += r;
    }
    closedir(d);
    return total;
}

int main(int argc, char **argv)
{
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int r = replay_path(argv[i]);
        if (r < 0) return 1;
        total += r;
    }
    printf("replayed %d inputs\n", total);
    return 0;
}
