/*
 * shuffle_files.c -- the names of a shuffle's files and the removal of map
 * outputs (see shuffle_files.h).
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shuffle_files.h"

/* <dir>/shuffle_<s>_<m>_<a>.<ext>, or "" when it does not fit. */
static void output_path(char *buf, size_t len, const char *dir, uint32_t shuffle_id, uint32_t map_id,
                        uint64_t attempt, const char *ext) {
    int n = snprintf(buf, len, "%s/shuffle_%u_%u_%llu.%s", dir, shuffle_id, map_id, (unsigned long long)attempt, ext);
    if (len && (n < 0 || (size_t)n >= len)) buf[0] = 0;
}

void shuffle_data_path(char *buf, size_t len, const char *dir, uint32_t shuffle_id, uint32_t map_id,
                       uint64_t attempt) {
    output_path(buf, len, dir, shuffle_id, map_id, attempt, "data");
}

void shuffle_index_path(char *buf, size_t len, const char *dir, uint32_t shuffle_id, uint32_t map_id,
                        uint64_t attempt) {
    output_path(buf, len, dir, shuffle_id, map_id, attempt, "index");
}

int shuffle_tmp_path(char *buf, size_t len, const char *final, int pid, unsigned seq) {
    return snprintf(buf, len, "%s.tmp-%d-%u", final, pid, seq);
}

int shuffle_spill_template(char *buf, size_t len, const char *dir, uint32_t shuffle_id, uint32_t map_id,
                           uint64_t attempt, int pid) {
    char base[SHUFFLE_PATH];
    output_path(base, sizeof base, dir, shuffle_id, map_id, attempt, "spill");
    return snprintf(buf, len, "%s-%d-XXXXXX", base, pid) >= (int)len ? -1 : 0;
}

void shuffle_service_dir(char *buf, size_t len, const char *work_dir, const char *app) {
    snprintf(buf, len, "%s/%s/shuffle", work_dir, app);
}

const char *shuffle_loc_dir(const char *loc) {
    if (strncmp(loc, "ember://", 8) != 0) return loc;
    const char *d = strchr(loc + 8, '/');
    return d ? d : "";
}

void shuffle_remove_output(const char *dir, uint32_t shuffle_id, uint32_t map_id, uint64_t attempt) {
    char path[SHUFFLE_PATH];
    shuffle_index_path(path, sizeof path, dir, shuffle_id, map_id, attempt);
    unlink(path); /* index first: a reader never sees an index without data */
    shuffle_data_path(path, sizeof path, dir, shuffle_id, map_id, attempt);
    unlink(path);
}

void shuffle_remove(const char *dir, uint32_t shuffle_id) {
    char prefix[64], path[SHUFFLE_PATH];
    int plen = snprintf(prefix, sizeof prefix, "shuffle_%u_", shuffle_id);
    DIR *d = opendir(dir);
    if (!d) return;
    /* Index files first, then the rest: a reader never sees an index
     * without its data. */
    for (int pass = 0; pass < 2; pass++) {
        rewinddir(d);
        for (struct dirent *e; (e = readdir(d));) {
            if (strncmp(e->d_name, prefix, (size_t)plen)) continue;
            size_t k = strlen(e->d_name);
            int is_index = k > 6 && !strcmp(e->d_name + k - 6, ".index");
            if (is_index != (pass == 0)) continue;
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path) unlink(path);
        }
    }
    closedir(d);
}
