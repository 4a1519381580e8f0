build/executor/extsort.o: executor/extsort.c engine/err.h \
 executor/extsort.h executor/agg.h engine/buf.h include/ember.h \
 executor/blockfile.h engine/recfmt.h engine/buf.h
engine/err.h:
executor/extsort.h:
executor/agg.h:
engine/buf.h:
include/ember.h:
executor/blockfile.h:
engine/recfmt.h:
engine/buf.h:
