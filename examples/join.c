/*
 * join.c -- joins and per-key aggregation on two small in-memory datasets.
 *
 *     join [MASTER]
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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static void usage(void) {
    fprintf(stderr, "usage: join [MASTER]\n"
                    "  Joins built-in customer and order tables and prints the results.\n"
                    "  MASTER: local, local[N] or local[*] (default: $EMBER_MASTER, else local[*]).\n");
    exit(1);
}

static void fail(void) {
    fprintf(stderr, "join: %s\n", em_errmsg());
    exit(1);
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
 * em_batch_get returns point into the batch: copy what must outlive it. */
static row *decode_rows(em_batch *b, size_t *n) {
    *n = em_batch_count(b);
    row *rows = calloc(*n ? *n : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "join: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < *n; i++) {
        em_rec r;
        em_tuple t;
        if (em_batch_get(b, i, &r) != 0 || em_tuple_unpack(r.val, r.vlen, &t) != 0) fail();
        rows[i].id = em_i64_dec(r.key);
        if (t.a_present)
            snprintf(rows[i].name, sizeof rows[i].name, "%.*s", (int)t.alen, (const char *)t.a);
        rows[i].has_amount = t.b_present;
        if (t.b_present) rows[i].cents = em_i64_dec(t.b);
    }
    qsort(rows, *n, sizeof *rows, row_cmp);
    return rows;
}

static void print_rows(const char *title, em_rdd *joined) {
    em_batch *b;
    size_t n;
    if (!joined || em_collect(joined, &b) != 0) fail();
    row *rows = decode_rows(b, &n);
    em_batch_free(b);
    printf("%s\n", title);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].has_amount)
            printf("  %3lld  %-8s %8lld.%02lld\n", (long long)rows[i].id, rows[i].name,
                   (long long)(rows[i].cents / 100), (long long)(rows[i].cents % 100));
        else
            printf("  %3lld  %-8s %11s\n", (long long)rows[i].id, rows[i].name, "-");
    }
    free(rows);
}

int main(int argc, char **argv) {
    if (argc > 2 || (argc == 2 && (!argv[1][0] || argv[1][0] == '-'))) usage();
    em_ctx *ctx = em_open(argc == 2 ? argv[1] : NULL, NULL);
    if (!ctx) fail();

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
    em_rdd *cust = em_parallelize(ctx, cust_recs, NCUST, 2);
    em_rdd *ord = em_parallelize(ctx, ord_recs, NORD, 3);
    if (!cust || !ord) fail();

    print_rows("join (id, name, amount):", em_join(cust, ord, 0));
    print_rows("left_outer_join (every customer, '-' without orders):", em_left_outer_join(cust, ord, 0));

    /* Total per customer: sum on the order side (map-side combined), then
     * join the names in and sort by id.  Order 6 has no customer: the inner
     * join drops it. */
    em_rdd *totals = em_reduce_by_key(ord, sum_i64, NULL, 0, 0);
    em_rdd *named = em_sort_by_key(em_join(cust, totals, 0), 1, 1);
    em_batch *b;
    if (!named || em_collect(named, &b) != 0) fail();
    printf("total per customer (reduce_by_key + join + sort_by_key):\n");
    size_t pos = 0;
    em_rec r;
    while (em_batch_next(b, &pos, &r) == 1) {
        em_tuple t;
        if (em_tuple_unpack(r.val, r.vlen, &t) != 0) fail();
        int64_t cents = em_i64_dec(t.b);
        printf("  %3lld  %-8.*s %8lld.%02lld\n", (long long)em_i64_dec(r.key), (int)t.alen, (const char *)t.a,
               (long long)(cents / 100), (long long)(cents % 100));
    }
    em_batch_free(b);

    char *lineage = em_lineage(named);
    if (lineage) printf("lineage of the last result:\n%s\n", lineage);
    free(lineage);
    em_close(ctx);
    return 0;
}
