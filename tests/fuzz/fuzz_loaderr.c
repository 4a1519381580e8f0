/*
 * fuzz_loaderr.c -- reading the dynamic loader's failure from the last
 * lines of an executor's stderr (executor/applib.h: applib_loader_error),
 * which the program being run writes as it likes.
 *
 * Input: the stderr tail (made NUL-terminated, as the worker reads it);
 * its first byte picks the room given for the name (1 to 64 bytes).
 * Properties: no crash, no read or write out of bounds; on a find, the
 * name is non-empty, holds no ':' or newline, fits its room, and both the
 * name and the reason are what the input says after the loader's marker
 * (cut to fit); an exit code other than 127 or a signal never finds.
 */
#include <stdlib.h>
#include <string.h>

#include "applib.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t lcap = 1 + (size ? data[0] % 64 : 0);
    char *tail = malloc(size + 1), *lib = malloc(lcap), why[96];
    if (!tail || !lib) abort();
    memcpy(tail, data, size);
    tail[size] = 0;
    FZ_CHECK(!applib_loader_error(1, 0, tail, lib, lcap, why, sizeof why), "found with exit code 1");
    FZ_CHECK(!applib_loader_error(127, 6, tail, lib, lcap, why, sizeof why), "found with a signal");
    if (applib_loader_error(127, 0, tail, lib, lcap, why, sizeof why)) {
        FZ_CHECK(strlen(lib) < lcap, "name of %zu bytes in room for %zu", strlen(lib), lcap);
        FZ_CHECK(!strpbrk(lib, ":\n"), "name holds ':' or a newline: %s", lib);
        FZ_CHECK(strlen(why) < sizeof why && !strchr(why, '\n'), "reason holds a newline");
        const char *mark = strstr(tail, "error while loading shared libraries: ");
        FZ_CHECK(mark, "found without the marker");
        FZ_CHECK(!lib[0] || strstr(tail, lib), "a name the input does not hold: %s", lib);
        FZ_CHECK(!why[0] || strstr(tail, why), "a reason the input does not hold: %s", why);
    }
    free(tail);
    free(lib);
    return 0;
}
