/*
 * mpcheck.c -- a bound check of msgpack bytes before msgpack-c reads them
 * (see mpcheck.h).
 */
#include "mpcheck.h"

static uint64_t be_len(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* The first object of p[0, len), whose containers must announce no more
 * elements than there are bytes left: msgpack-c allocates an array's or
 * map's elements when it reads the header, so an unchecked 5-byte header
 * could ask for 100 GB. */
const char *mp_next(const uint8_t *p, size_t len, size_t *used) {
    size_t pos = 0;
    uint64_t need = 1; /* objects still to read; each takes >= 1 byte */
    while (need) {
        if (need > len - pos) return "not one msgpack message";
        uint8_t b = p[pos++];
        uint64_t skip = 0, nlen = 0, elems = 0;
        need--;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) skip = 0;
        else if (b <= 0x8f) elems = 2 * (uint64_t)(b & 0x0f);
        else if (b <= 0x9f) elems = b & 0x0f;
        else if (b <= 0xbf) skip = b & 0x1f;
        else if (b >= 0xc4 && b <= 0xc6) nlen = 1u << (b - 0xc4);         /* bin 8/16/32 */
        else if (b >= 0xc7 && b <= 0xc9) nlen = 1u << (b - 0xc7), skip = 1; /* ext: + type */
        else if (b == 0xca || b == 0xcb) skip = b == 0xca ? 4 : 8;
        else if (b >= 0xcc && b <= 0xd3) skip = 1u << ((b - 0xcc) & 3);  /* (u)int 8..64 */
        else if (b >= 0xd4 && b <= 0xd8) skip = 1 + (1u << (b - 0xd4));   /* fixext */
        else if (b >= 0xd9 && b <= 0xdb) nlen = 1u << (b - 0xd9);         /* str 8/16/32 */
        else if (b >= 0xdc && b <= 0xdf) {                                  /* array/map 16/32 */
            int n = b & 1 ? 4 : 2;
            if ((size_t)n > len - pos) return "not one msgpack message";
            elems = be_len(p + pos, n) * (b >= 0xde ? 2 : 1);
            pos += (size_t)n;
        } else return "not one msgpack message"; /* 0xc1 */
        if (nlen) {
            if (nlen > len - pos) return "not one msgpack message";
            skip += be_len(p + pos, (int)nlen);
            pos += (size_t)nlen;
        }
        if (skip > len - pos) return "not one msgpack message";
        pos += (size_t)skip;
        need += elems;
    }
    *used = pos;
    return NULL;
}

const char *mp_precheck(const uint8_t *p, size_t len) {
    size_t used;
    const char *why = mp_next(p, len, &used);
    return why ? why : used == len ? NULL : "not one msgpack message";
}

