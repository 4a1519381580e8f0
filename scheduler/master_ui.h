/*
 * master_ui.h -- what the master's status port serves besides /json: its
 * page (/), with the workers and the running, waiting and completed
 * applications, their executors and links to each worker's page and each
 * running application's UI; and its metrics in the Prometheus text format
 * (Spark's master source: workers, aliveWorkers, apps, waitingApps).
 * Pure: the daemon (masterd.c) gives the master and the clocks.
 */
#ifndef EM_MASTER_UI_H
#define EM_MASTER_UI_H

#include <stdint.h>

#include "buf.h"
#include "master.h"

/* The page, appended to out.  url is the master's ("ember://host:port");
 * wall_ms the wall clock at the monotonic now_ms m counts in.  0 or
 * EM_ENOMEM. */
int master_ui_page(const master *m, const char *url, uint64_t now_ms, uint64_t wall_ms, ebuf *out);

/* The metrics as Spark's PrometheusServlet writes its master source:
 *   metrics_master_workers_Number{type="gauges"} N   (and _Value), for
 *   workers (every worker the master knows), aliveWorkers, apps (running
 *   and waiting) and waitingApps,
 * each family with its # HELP and # TYPE gauge lines.  0 or EM_ENOMEM. */
int master_ui_metrics(const master *m, ebuf *out);
/* The running and waiting applications as Spark's application source
 * writes them (/metrics/applications/prometheus):
 *   metrics_application_<name>_<start>_runtime_ms_Number{type="gauges"}
 * and _cores (granted), _Value too; <name> is the application's name with
 * every byte but a letter or digit made '_', <start> its start in epoch
 * ms.  now_ms is the master's clock, wall_ms the time of day.  0 or
 * EM_ENOMEM. */
int master_ui_app_metrics(const master *m, uint64_t now_ms, uint64_t wall_ms, ebuf *out);

#endif
