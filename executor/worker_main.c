/*
 * worker_main.c -- bin/ember-worker: the worker daemon (worker.h).
 */
#include "worker.h"

int main(int argc, char **argv) { return worker_main(argc, argv); }
