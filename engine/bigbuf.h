/*
 * bigbuf.h -- big task buffers (sort arenas and indexes, aggregation
 * tables) that keep their pages from one task to the next.
 *
 * A task that allocated its sort arena, index and hash table afresh and
 * freed them at its end would have the kernel fault in and clear every
 * page again for the next task (a large part of a big sort's time).  Here
 * a buffer that grows past BB_MIN becomes an anonymous mapping of whole
 * chunks (BB_MIN bytes, BB_MIN-aligned: a huge page each where the kernel
 * backs them so), and freeing it parks its chunks in a small process-wide
 * cache (BB_CACHE_SLOTS ranges, BB_CACHE_BYTES in all).  Any chunk serves any
 * buffer: a new buffer takes the start of a cached range that holds it,
 * else it is a new range into which mremap moves cached chunks -- page
 * table entries moved, no page cleared -- only the chunks the cache
 * cannot give being fresh memory, which the kernel clears and puts in at
 * once (MADV_POPULATE_WRITE: one call, not a page fault per page); a
 * growing one takes the cached range right after it or a range that holds
 * it (its bytes copied), else grows with one mremap (bigbuf.c).  A
 * buffer that will grow big may still ask for its expected size at once
 * (one bb_reserve), which saves the copies and moves of growing.  A
 * reused chunk's bytes are whatever its last user left: callers must not
 * expect zeros.
 *
 * The functions work on an ebuf (buf.h) whose memory they alone manage: a
 * buffer grown with bb_reserve must be freed with bb_free, never with
 * ebuf_free, and never handed out with ebuf_steal.
 */
#ifndef EM_BIGBUF_H
#define EM_BIGBUF_H

#include <stddef.h>

#include "buf.h"

#define BB_MIN ((size_t)2 << 20)            /* a chunk: one huge page's size */
#define BB_CACHE_SLOTS 64
#define BB_CACHE_BYTES ((size_t)1 << 30)

/* Room for extra more bytes (contents kept).  0 or EM_ENOMEM. */
int bb_reserve(ebuf *b, size_t extra);
/* Give back the memory past len (for a buffer kept long, as a cached
 * partition or a map output: a reused mapping may be much larger than what
 * it holds).  A mapping's whole chunks past len go to the cache, as a
 * freed mapping does, their pages still in.  The bytes are kept; never
 * fails. */
void bb_shrink(ebuf *b);
/* bb_reserve for a buffer kept long and read many times (a cached
 * partition): the chunks of its mapping that the extra bytes will be
 * written to are advised for huge pages, so that its pages not yet in
 * come as huge ones where the kernel allows (one TLB entry where
 * 4 KiB pages take 512, on every read); its fresh memory is not put in
 * at once, which would give it 4 KiB pages before the advice.  A task's
 * own buffers (tables, sort arenas, map outputs) do not ask, and get what
 * the system's policy gives (4 KiB pages under Debian's THP "madvise"): on
 * some virtual machines we measured, a huge page new to the guest costs
 * its host about five times the 4 KiB pages it replaces, and a task writes
 * its buffers once or twice (bench/firsttouch, bench/RESULTS.md). */
int bb_reserve_kept(ebuf *b, size_t extra);
/* Give the memory back (a mapping to the cache); b becomes empty. */
void bb_free(ebuf *b);
/* Unmap every cached mapping (em_close; the cache refills on demand). */
void bb_trim(void);
/* Since the process started: bytes of fresh memory mapped (chunks the
 * cache could not give: pages the kernel will fault in and clear), and
 * cached chunks taken (tests). */
void bb_counts(size_t *fresh, size_t *taken);
/* Since the process started: growths of a mapping made of several areas,
 * which mremap cannot grow, whose own chunks were moved one call each into
 * a new range (tests). */
size_t bb_own_moves(void);

#endif
