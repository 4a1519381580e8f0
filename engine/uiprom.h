/*
 * uiprom.h -- the driver's executor metrics in the Prometheus text format
 * (Spark's /metrics/executors/prometheus, ember.ui.prometheus.enabled):
 * per application and executor, the names and labels Spark's
 * PrometheusResource uses, from the status store's executors.
 */
#ifndef EM_UIPROM_H
#define EM_UIPROM_H

#include "buf.h"
#include "rest.h"

/* Append the metrics of every application p lends to body: 0, or
 * EM_ENOMEM. */
int uiprom_executors(const rest_provider *p, ebuf *body);

#endif
