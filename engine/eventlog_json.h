/*
 * eventlog_json.h -- one listener event (appevent.h) as one line of Spark's
 * event-log JSON, and back.
 *
 * The writer produces each event exactly as Apache Spark 3.5's JsonProtocol
 * writes it: the same "Event" names, field names, nesting and field order,
 * with the fields ember has no value for written as Spark writes their
 * defaults ("JVM GC Time": 0, "Accumulables": [], "Updated Blocks": [],
 * "Task Executor Metrics" all 0, "Resource Profile Id": 0,
 * "DeterministicLevel": "DETERMINATE", ...).  So Spark's history server and
 * the tools that read Spark's logs read ember's.
 *
 * The reader takes one line written by ember or by Apache Spark 1.x to 3.x
 * and makes a new app_event of it.  It trusts nothing in the line:
 *   - every field but "Event" is optional; a missing one keeps appevent.h's
 *     "absent" value (0, NULL, -1 for "Partition ID" and "Map Index");
 *   - Spark 1.x's forms are read as their newer equivalents: "Use Tachyon"
 *     (and 1.4's "Use ExternalBlockStore") is use_offheap, an executor id
 *     "<driver>" is "driver", a job without "Stage Infos" gets one stage per
 *     "Stage IDs" entry named "unknown" (as Spark does);
 *   - a "Task End Reason" this build does not know is AE_UNKNOWN_REASON with
 *     its name kept in end.class_name (written back under that name);
 *   - an "Event" this build does not model (Spark's SQL events, executor
 *     metrics updates, ...) is AE_OTHER with its name in e->other: not an
 *     error, and written back as {"Event": name} alone;
 *   - malformed JSON, a line past the parser's limits, a missing or
 *     non-string "Event", or a known field of the wrong type (a string where
 *     Spark writes a number, an int out of range) is EM_ECORRUPT with a
 *     message naming the field ("event log: \"Task Info\".\"Task ID\" is not
 *     an integer");
 *   - strings longer than a fixed field of app_event (exec_id, host,
 *     locality) are cut at a UTF-8 character boundary; a string with an
 *     escaped NUL ends at it; negative task metrics read as 0.
 *
 * TaskCommitDenied keeps Spark's fields: "Job ID" in e->job_id, "Partition
 * ID" and "Attempt Number" are the task's partition and attempt; the reader
 * sets end.message to Spark's description of the denial.
 *
 * Write, read, write gives the same bytes for every event kind.
 */
#ifndef EM_EVENTLOG_JSON_H
#define EM_EVENTLOG_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "appevent.h"
#include "buf.h"
#include "json.h"

/* Limits the reader parses one line with: Spark's SQL events carry plan
 * trees hundreds of levels deep and environment updates carry megabytes of
 * classpath, so these are wide (the parser still bounds every line). */
#define EVJSON_MAX_DEPTH JSON_DEPTH_MAX
#define EVJSON_MAX_NODES ((uint32_t)1 << 22)
#define EVJSON_MAX_BYTES ((size_t)256 << 20)

/* Append e to out as one JSON object, with no newline after it.  Returns 0,
 * or EM_ENOMEM / EM_EINVAL (an event kind out of range), with out as it
 * was before the call. */
int evjson_write(const app_event *e, ebuf *out);

/* Parse line[0, len) (one JSON object, no newline needed; a trailing "\r"
 * or "\n" is whitespace) with doc as the parser's reusable memory, and make
 * *out a new event the caller frees with app_event_free.  Returns 0, or
 * EM_ECORRUPT (see above) or EM_ENOMEM with *out NULL. */
int evjson_read(const uint8_t *line, size_t len, json_doc *doc, app_event **out);

#endif
