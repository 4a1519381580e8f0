build/executor/shuffle_write.o: executor/shuffle_write.c \
 executor/aggmap.h engine/buf.h include/ember.h executor/blockfile.h \
 engine/err.h executor/extsort.h executor/agg.h engine/recfmt.h \
 engine/buf.h executor/shuffle.h
executor/aggmap.h:
engine/buf.h:
include/ember.h:
executor/blockfile.h:
engine/err.h:
executor/extsort.h:
executor/agg.h:
engine/recfmt.h:
engine/buf.h:
executor/shuffle.h:
