/*
 * firsttouch.c -- what memory new to the process costs on this machine,
 * the figures behind bigbuf.h's choice of page size for task buffers.
 *
 *   firsttouch [MIB [PAUSE_S]]   (defaults: 256 MiB, a 10 s pause)
 *
 * One thread writes MIB MiB of a fresh anonymous mapping (2 MiB-aligned),
 * with 4 KiB pages (MADV_NOHUGEPAGE) and then advised for huge pages
 * (MADV_HUGEPAGE), and with 4 KiB pages put in by one
 * madvise(MADV_POPULATE_WRITE) before the write (timed with it: what
 * bigbuf.c does with a task buffer's fresh memory), three times each:
 *   after a pause   the first write after PAUSE_S seconds of rest: on a
 *                   virtual machine the guest hands memory it freed back to
 *                   its host after a while (free page reporting), and
 *                   touching it again costs the host a fault per page;
 *   at once         unmapped and mapped afresh right after: memory the
 *                   kernel just took back, still the guest's;
 *   in place        the same bytes written again, no fault (the bound).
 * Each line prints GB/s and ms per MiB.  Huge pages are a hint: a kernel
 * whose transparent huge pages are off gives 4 KiB pages for both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK ((size_t)2 << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A fresh mapping of n bytes, CHUNK-aligned, advised as asked. */
static unsigned char *fresh(size_t n, int advice) {
    unsigned char *p = mmap(NULL, n + CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    size_t head = (CHUNK - ((size_t)p & (CHUNK - 1))) & (CHUNK - 1);
    if (head) munmap(p, head);
    munmap(p + head + n, CHUNK - head);
    madvise(p + head, n, advice);
    return p + head;
}

/* Every page of [p, p + n) put in at once, when asked (a kernel before
 * 5.14 refuses: its pages then come one fault each, as the line shows). */
static void populate(unsigned char *p, size_t n, int ask) {
    if (ask && madvise(p, n, MADV_POPULATE_WRITE)) perror("madvise(MADV_POPULATE_WRITE)");
}

static void report(const char *kind, const char *when, size_t n, double s) {
    printf("  %-10s %-14s %7.2f GB/s  %6.3f ms/MiB\n", kind, when, (double)n / 1e9 / s, s * 1e3 / (double)(n >> 20));
}

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 256, pause = argc > 2 ? atol(argv[2]) : 10;
    if (mib < 2 || mib > (1L << 20) || pause < 0 || pause > 3600) {
        fprintf(stderr, "usage: firsttouch [MIB (2..1048576) [PAUSE_S (0..3600)]]\n");
        return 1;
    }
    size_t n = (size_t)mib << 20;
    printf("first touch of %ld MiB, one thread, after a %ld s pause and at once\n", mib, pause);
    static const struct {
        const char *name;
        int advice, populate;
    } kinds[] = {{"4 KiB", MADV_NOHUGEPAGE, 0}, {"huge", MADV_HUGEPAGE, 0}, {"populated", MADV_NOHUGEPAGE, 1}};
    for (int k = 0; k < 3; k++) {
        sleep((unsigned)pause);
        unsigned char *p = fresh(n, kinds[k].advice);
        if (!p) {
            perror("mmap");
            return 1;
        }
        double t0 = now();
        populate(p, n, kinds[k].populate);
        memset(p, 1, n);
        report(kinds[k].name, "after a pause", n, now() - t0);
        munmap(p, n);
        if (!(p = fresh(n, kinds[k].advice))) {
            perror("mmap");
            return 1;
        }
        t0 = now();
        populate(p, n, kinds[k].populate);
        memset(p, 2, n);
        report(kinds[k].name, "at once", n, now() - t0);
        t0 = now();
        memset(p, 3, n);
        report(kinds[k].name, "in place", n, now() - t0);
        munmap(p, n);
    }
    return 0;
}
