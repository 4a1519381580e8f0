/*
 * commit.c -- the output commit coordinator (see commit.h): per open stage,
 * the attempt authorized to commit each partition (0: none yet).
 */
#include <stdlib.h>

#include "commit.h"
#include "ember.h"
#include "err.h"

struct commit_stage {
    commit_stage *next;
    uint32_t id;
    int nparts;
    uint64_t *winner; /* per partition: the authorized attempt, 0 if none */
};

void cc_init(commit_coord *c) {
    pthread_mutex_init(&c->mu, NULL);
    c->stages = NULL;
}

void cc_destroy(commit_coord *c) {
    for (commit_stage *s = c->stages, *n; s; s = n) {
        n = s->next;
        free(s->winner);
        free(s);
    }
    c->stages = NULL;
    pthread_mutex_destroy(&c->mu);
}

static commit_stage *find(commit_coord *c, uint32_t stage) {
    for (commit_stage *s = c->stages; s; s = s->next)
        if (s->id == stage) return s;
    return NULL;
}

int cc_stage_open(commit_coord *c, uint32_t stage, int nparts) {
    commit_stage *s = calloc(1, sizeof *s);
    if (!s || !(s->winner = calloc((size_t)nparts + 1, sizeof *s->winner))) {
        free(s);
        return em__seterr(EM_ENOMEM, "commit coordinator: out of memory");
    }
    s->id = stage;
    s->nparts = nparts;
    pthread_mutex_lock(&c->mu);
    s->next = c->stages;
    c->stages = s;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void cc_stage_close(commit_coord *c, uint32_t stage) {
    pthread_mutex_lock(&c->mu);
    commit_stage **pp = &c->stages;
    while (*pp && (*pp)->id != stage) pp = &(*pp)->next;
    commit_stage *s = *pp;
    if (s) *pp = s->next;
    pthread_mutex_unlock(&c->mu);
    if (s) {
        free(s->winner);
        free(s);
    }
}

int cc_ask(commit_coord *c, uint32_t stage, int partition, uint64_t attempt) {
    int ok = 0;
    pthread_mutex_lock(&c->mu);
    commit_stage *s = find(c, stage);
    if (s && partition >= 0 && partition < s->nparts && attempt) {
        if (!s->winner[partition]) s->winner[partition] = attempt;
        ok = s->winner[partition] == attempt;
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

void cc_attempt_failed(commit_coord *c, uint32_t stage, int partition, uint64_t attempt) {
    pthread_mutex_lock(&c->mu);
    commit_stage *s = find(c, stage);
    if (s && partition >= 0 && partition < s->nparts && s->winner[partition] == attempt) s->winner[partition] = 0;
    pthread_mutex_unlock(&c->mu);
}
