/*
 * masterd_main.c -- bin/ember-master: the master daemon (masterd.h).
 */
#include "masterd.h"

int main(int argc, char **argv) { return masterd_main(argc, argv); }
