/*
 * commit.h -- the output commit coordinator (Spark's OutputCommitCoordinator,
 * first committer wins).
 *
 * A task that writes output (save_as_text_file) asks, once its file is
 * complete, whether it may commit it.  The first attempt of a partition to
 * ask is authorized; any other attempt of that partition is denied and
 * deletes its own files.  If the authorized attempt then fails before it
 * reports success, the authorization is released and the next attempt to
 * ask gets it.  So at most one attempt's file per partition ever reaches
 * the output, whatever retries and speculative copies run.
 *
 * Any thread may ask (executor threads in local[N]; the scheduler, on an
 * executor's message, in a cluster); the scheduler opens and closes stages
 * and reports failed attempts.
 */
#ifndef EM_COMMIT_H
#define EM_COMMIT_H

#include <pthread.h>
#include <stdint.h>

typedef struct commit_stage commit_stage;

typedef struct commit_coord {
    pthread_mutex_t mu;
    commit_stage *stages; /* the stages open now */
} commit_coord;

void cc_init(commit_coord *c);
void cc_destroy(commit_coord *c);
/* Start coordinating the nparts partitions of a stage.  0 or EM_ENOMEM. */
int cc_stage_open(commit_coord *c, uint32_t stage, int nparts);
/* Forget a stage (its job ended). */
void cc_stage_close(commit_coord *c, uint32_t stage);
/* May attempt `attempt` of the partition commit?  1 yes, 0 no (another
 * attempt holds the authorization, or the stage is not open). */
int cc_ask(commit_coord *c, uint32_t stage, int partition, uint64_t attempt);
/* The attempt ended without success: if it held the authorization, the
 * partition's is free again. */
void cc_attempt_failed(commit_coord *c, uint32_t stage, int partition, uint64_t attempt);

#endif
