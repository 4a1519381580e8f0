/*
 * appinfo.h -- the listener events that describe an application itself
 * rather than its work: its start (name, id, user, time), its environment
 * (the settings, secrets redacted, the system and the runtime), and its
 * end.  The wiring file posts them to the listener bus around the
 * scheduler's own events.
 */
#ifndef EM_APPINFO_H
#define EM_APPINFO_H

#include <stdint.h>

#include "appevent.h"
#include "ember.h"

/* An application's id as Spark forms it for a driver that has no master
 * to assign one: "local-<epoch ms>".  out holds at least 32 bytes. */
void appinfo_local_id(int64_t start_ms, char *out, size_t cap);

/* SparkListenerApplicationStart: name, id, the user running the driver
 * ($USER, else the uid's name), start_ms.  NULL when out of memory. */
app_event *appinfo_start(const char *name, const char *app_id, int64_t start_ms);
/* SparkListenerEnvironmentUpdate: "Spark Properties" the settings conf
 * sets, with ember.master, ember.app.name and ember.app.id, each value of a
 * key conf_redacted names shown as CONF_REDACTED; "System Properties" the
 * host, system and user; "JVM Information" (runtime) ember's version and C
 * library.  NULL when out of memory. */
app_event *appinfo_env(const em_conf *conf, const char *master, const char *app_id);
/* SparkListenerApplicationEnd at end_ms.  NULL when out of memory. */
app_event *appinfo_end(int64_t end_ms);

#endif
