/*
 * fuzz_numparse.c -- the number parser (mllib/numparse.h) alone, against
 * strtod, bit for bit.
 *
 * Properties:
 *   - wherever a number may start in the input (its start, or after a
 *     blank, ':', ',' or newline), np_parse_f64 reads exactly the bytes of
 *     the number strtod reads there and gives strtod's bits, or rejects
 *     exactly what the grammar rejects (fz_check_numbers);
 *   - np_eisel_lemire, given the input's first 10 bytes as a mantissa w
 *     (8 bytes) and an exponent q in [-400, 400) (2 bytes), answers only
 *     with strtod's value of "we q".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "numparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_check_numbers((const char *)data, size);
    if (size >= 10) {
        uint64_t w;
        uint16_t e;
        memcpy(&w, data, 8);
        memcpy(&e, data + 8, 2);
        int64_t q = (int64_t)(e % 800) - 400;
        char buf[64];
        double got, want;
        snprintf(buf, sizeof buf, "%llue%lld", (unsigned long long)w, (long long)q);
        want = strtod(buf, NULL);
        if (np_eisel_lemire(w, q, data[0] & 1, &got)) {
            if (data[0] & 1) want = -want;
            FZ_CHECK(!memcmp(&got, &want, sizeof got), "np_eisel_lemire(%s) gives %.17g, strtod %.17g", buf, got,
                     want);
        }
    }
    return 0;
}
