build/executor/aggmap.o: executor/aggmap.c executor/aggmap.h engine/buf.h \
 include/ember.h engine/err.h engine/recfmt.h engine/buf.h
executor/aggmap.h:
engine/buf.h:
include/ember.h:
engine/err.h:
engine/recfmt.h:
engine/buf.h:
