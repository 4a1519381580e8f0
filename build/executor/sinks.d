build/executor/sinks.o: executor/sinks.c engine/err.h engine/fnref.h \
 executor/pipe.h executor/agg.h engine/buf.h include/ember.h \
 engine/blockstore.h executor/runner.h engine/taskresult.h \
 engine/taskdesc.h engine/buf.h engine/fnref.h engine/recfmt.h \
 executor/shuffle.h
engine/err.h:
engine/fnref.h:
executor/pipe.h:
executor/agg.h:
engine/buf.h:
include/ember.h:
engine/blockstore.h:
executor/runner.h:
engine/taskresult.h:
engine/taskdesc.h:
engine/buf.h:
engine/fnref.h:
engine/recfmt.h:
executor/shuffle.h:
