/*
 * join.c -- joins and per-key aggregation on two small in-memory datasets.
 *
 *     join [--conf KEY=VALUE]... [MASTER]
 *
 * customers: (customer id, name)          orders: (customer id, amount in cents)
 *
 * Keys are int64 ids in ember's order-preserving encoding (em_i64_enc), so
 * sorting by key bytes sorts by id.  The program prints
 *   1. join(customers, orders): one row per order of a known customer;
 *   2. left_outer_join(customers, orders): every customer, with "-" where a
 *      customer has no orders;
 *   3. the total spent per customer: reduce_by_key over the orders, joined
 *      with the names, sorted by id with sort_by_key.
 * Join values are tuples (em_tuple_unpack): a = the left value, b = the right
 * one, either possibly missing in the outer joins.  Rows 1 and 2 are sorted on
 * the driver (qsort), because a join orders neither its keys nor the values
 * of one key.
 *
 * MASTER: local, local[N] or local[*]; default $EMBER_MASTER, then local[*].
 * --conf KEY=VALUE (repeatable) sets any configuration key, e.g.
 * --conf ember.progress=false.  Exit status: 0 on success, 2 for a usage
 * error (the message names the argument), 1 on any other failure with the
 * engine's message; every path after em_open closes the context.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static const char usage_text[] =
    "usage: join [--conf KEY=VALUE]... [MASTER]\n"
    "  Joins built-in customer and order tables and prints the results.\n"
    "  MASTER: local[N], local[*], local-cluster[W,C] or ember://HOST:PORT (default: $EMBER_MASTER, else local[*]).\n"
    "  --conf KEY=VALUE  set a configuration key (e.g. ember.progress=false)\n";

/* A usage error: what is wrong, where to look; exit status 2. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("join: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nRun 'join --help' for usage.\n", stderr);
    va_end(ap);
    return 2;
}

static const struct { int64_t id; const char *name; } customers[] = {
    {1, "Ada"}, {2, "Grace"}, {3, "Edsger"}, {4, "Barbara"}, {5, "Donald"},
};
static const struct { int64_t customer; int64_t cents; } orders[] = {
    {1, 2500}, {2, 1299}, {1, 4200}, {3, 999}, {2, 350}, {5, 12000}, {6, 700}, {1, 180},
};
#define NCUST (sizeof customers / sizeof customers[0])
#define NORD (sizeof orders / sizeof orders[0])

/* reduce_by_key: sum two encoded int64 amounts. */
static int sum_i64(const em_rec *a, const em_rec *b, em_emitter *out, const void *arg) {
    (void)arg;
    return em_emit_i64(out, em_i64_dec(a->val) + em_i64_dec(b->val));
}

/* A joined row, decoded on the driver. */
typedef struct row {
    int64_t id;
    char name[32];  /* "" when the customer side is missing */
    int has_amount;
    int64_t cents;
} row;

static int row_cmp(const void *pa, const void *pb) {
    const row *a = pa, *b = pb;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    if (a->has_amount != b->has_amount) return a->has_amount - b->has_amount;
    return (a->cents > b->cents) - (a->cents < b->cents);
}

/* Decode a batch of (id, tuple(name, amount)) records into rows.  The views
 * em_batch_get returns point into the batch: copy what must outlive it.
 * NULL on failure, with the message printed. */
static row *decode_rows(em_batch *b, size_t *n) {
    *n = em_batch_count(b);
    row *rows = calloc(*n ? *n : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "join: out of memory for %zu rows\n", *n);
        return NULL;
    }
    for (size_t i = 0; i < *n; i++) {
        em_rec r;
        em_tuple t;
        if (em_batch_get(b, i, &r) != 0 || em_tuple_unpack(r.val, r.vlen, &t) != 0) {
            fprintf(stderr, "join: %s\n", em_errmsg());
            free(rows);
            return NULL;
        }
        rows[i].id = em_i64_dec(r.key);
        if (t.a_present)
            snprintf(rows[i].name, sizeof rows[i].name, "%.*s", (int)t.alen, (const char *)t.a);
        rows[i].has_amount = t.b_present;
        if (t.b_present) rows[i].cents = em_i64_dec(t.b);
    }
    qsort(rows, *n, sizeof *rows, row_cmp);
    return rows;
}

/* Collect a joined RDD and print it under title.  0, or -1 with the
 * message printed. */
static int print_rows(const char *title, em_rdd *joined) {
    em_batch *b;
    size_t n;
    if (!joined || em_collect(joined, &b) != 0) {
        fprintf(stderr, "join: %s\n", em_errmsg());
        return -1;
    }
    row *rows = decode_rows(b, &n);
    em_batch_free(b);
    if (!rows) return -1;
    printf("%s\n", title);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].has_amount)
            printf("  %3lld  %-8s %8lld.%02lld\n", (long long)rows[i].id, rows[i].name,
                   (long long)(rows[i].cents / 100), (long long)(rows[i].cents % 100));
        else
            printf("  %3lld  %-8s %11s\n", (long long)rows[i].id, rows[i].name, "-");
    }
    free(rows);
    return 0;
}

int main(int argc, char **argv) {
    const char *master = NULL; /* NULL: $EMBER_MASTER, then local[*] */
    int options = 1, rc = 0;
    em_conf *conf = em_conf_new();
    if (!conf) {
        fprintf(stderr, "join: %s\n", em_errmsg());
        return 1;
    }
    if (em_conf_parse_args(conf, &argc, argv)) rc = bad_usage("%s", em_errmsg());
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (options && !strcmp(a, "--")) {
            options = 0;
        } else if (options && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            fputs(usage_text, stdout);
            em_conf_free(conf);
            return 0;
        } else if (options && a[0] == '-' && a[1]) {
            rc = bad_usage("unknown option '%s'", a);
        } else if (master) {
            rc = bad_usage("unexpected argument '%s' (only MASTER)", a);
        } else if (!a[0]) {
            rc = bad_usage("empty MASTER");
        } else {
            master = a;
        }
    }
    em_ctx *ctx = rc ? NULL : em_open(master, conf);
    em_conf_free(conf);
    if (rc) return rc;
    if (!ctx) {
        fprintf(stderr, "join: %s\n", em_errmsg());
        return 1;
    }

    /* The records: em_parallelize copies keys and values, so the
     * encoded ids may live on the stack. */
    uint8_t cust_keys[NCUST][8], ord_keys[NORD][8], ord_vals[NORD][8];
    em_rec cust_recs[NCUST], ord_recs[NORD];
    for (size_t i = 0; i < NCUST; i++) {
        em_i64_enc(customers[i].id, cust_keys[i]);
        cust_recs[i] = (em_rec){cust_keys[i], 8, customers[i].name, strlen(customers[i].name)};
    }
    for (size_t i = 0; i < NORD; i++) {
        em_i64_enc(orders[i].customer, ord_keys[i]);
        em_i64_enc(orders[i].cents, ord_vals[i]);
        ord_recs[i] = (em_rec){ord_keys[i], 8, ord_vals[i], 8};
    }
    /* From here every failure goes to fail: (or, its message printed, to
     * out:), which closes the context. */
    em_batch *b = NULL;
    rc = 1;
    em_rdd *cust = em_parallelize(ctx, cust_recs, NCUST, 2);
    em_rdd *ord = em_parallelize(ctx, ord_recs, NORD, 3);
    if (!cust || !ord) goto fail;

    if (print_rows("join (id, name, amount):", em_join(cust, ord, 0)) ||
        print_rows("left_outer_join (every customer, '-' without orders):", em_left_outer_join(cust, ord, 0)))
        goto out;

    /* Total per customer: sum on the order side (map-side combined), then
     * join the names in and sort by id.  Order 6 has no customer: the inner
     * join drops it. */
    em_rdd *totals = em_reduce_by_key(ord, sum_i64, NULL, 0, 0);
    em_rdd *named = em_sort_by_key(em_join(cust, totals, 0), 1, 1);
    if (!named || em_collect(named, &b) != 0) goto fail;
    printf("total per customer (reduce_by_key + join + sort_by_key):\n");
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        em_tuple t;
        if (em_tuple_unpack(r.val, r.vlen, &t) != 0) goto fail;
        int64_t cents = em_i64_dec(t.b);
        printf("  %3lld  %-8.*s %8lld.%02lld\n", (long long)em_i64_dec(r.key), (int)t.alen, (const char *)t.a,
               (long long)(cents / 100), (long long)(cents % 100));
    }

    char *lineage = em_lineage(named);
    if (lineage) printf("lineage of the last result:\n%s\n", lineage);
    free(lineage);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "join: %s\n", em_errmsg());
out:
    em_batch_free(b);
    em_close(ctx);
    return rc;
}
