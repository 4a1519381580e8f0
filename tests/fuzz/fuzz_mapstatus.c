/*
 * fuzz_mapstatus.c -- a shuffle-map task's compressed segment sizes
 * (engine/mapstatus.h), as the driver takes them from an executor's
 * result: the input's first two bytes are the shuffle's width (little
 * endian, 0 to 65,535 partitions), the rest the status.
 *
 * Properties:
 *   - ms_check accepts the status or names why not, and never reads past
 *     it;
 *   - of an accepted status, ms_seg reads every partition (and none out of
 *     range, which read as 0) within the bytes, and the zeros it reads are
 *     the empty segments the status counts: exactly nempty of a highly
 *     compressed one;
 *   - encoding the sizes read back gives a status that is accepted and
 *     reads back zero at the same partitions.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "mapstatus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int n = data[0] | data[1] << 8;
    /* a copy of its exact length, so that a read past it is caught */
    size_t len = size - 2;
    uint8_t *b = malloc(len ? len : 1);
    if (!b) return 0;
    memcpy(b, data + 2, len);
    const char *why = NULL;
    if (ms_check(b, len, n, &why)) {
        FZ_CHECK(why && why[0], "refused without a reason");
        free(b);
        return 0;
    }
    uint64_t *segs = malloc(sizeof *segs * (size_t)(n ? n : 1));
    FZ_CHECK(segs, "out of memory");
    uint32_t zeros = 0;
    for (int i = 0; i < n; i++)
        if (!(segs[i] = ms_seg(b, n, i))) zeros++;
    FZ_CHECK(ms_seg(b, n, -1) == 0 && ms_seg(b, n, n) == 0, "a partition out of range read as a size");
    if (b[0] == 1) {
        uint32_t nempty = get_u32le(b + 13);
        FZ_CHECK(zeros == nempty, "%u zeros read, %u empty counted", zeros, nempty);
    }
    ebuf e = EBUF_INIT;
    for (int k = 0; k < 2; k++) {
        e.len = 0;
        FZ_CHECK(ms_encode(segs, n, k ? 1000 : 0, &e) == 0, "out of memory");
        FZ_CHECK(ms_check(e.p, e.len, n, &why) == 0, "a status encoded here refused: %s", why);
        for (int i = 0; i < n; i++)
            FZ_CHECK(!ms_seg(e.p, n, i) == !segs[i], "partition %d: empty in one, not the other", i);
    }
    ebuf_free(&e);
    free(segs);
    free(b);
    return 0;
}
