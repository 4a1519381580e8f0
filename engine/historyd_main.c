/*
 * historyd_main.c -- bin/ember-history-server (historyd.h).
 */
#include "historyd.h"

int main(int argc, char **argv) { return historyd_main(argc, argv); }
