build/engine/blockstore.o: engine/blockstore.c engine/blockstore.h \
 include/ember.h engine/err.h
engine/blockstore.h:
include/ember.h:
engine/err.h:
