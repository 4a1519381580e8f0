build/engine/batch.o: engine/batch.c engine/batch.h engine/buf.h \
 include/ember.h engine/err.h engine/recfmt.h
engine/batch.h:
engine/buf.h:
include/ember.h:
engine/err.h:
engine/recfmt.h:
