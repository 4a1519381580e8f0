build/engine/actions.o: engine/actions.c engine/batch.h engine/buf.h \
 include/ember.h engine/builtins.h engine/conf.h engine/ctx.h \
 engine/taskdesc.h engine/fnref.h engine/err.h engine/rdd.h \
 engine/textfile.h engine/recfmt.h executor/runner.h engine/blockstore.h \
 engine/buf.h engine/taskresult.h executor/shuffle.h executor/agg.h \
 engine/taskresult.h
engine/batch.h:
engine/buf.h:
include/ember.h:
engine/builtins.h:
engine/conf.h:
engine/ctx.h:
engine/taskdesc.h:
engine/fnref.h:
engine/err.h:
engine/rdd.h:
engine/textfile.h:
engine/recfmt.h:
executor/runner.h:
engine/blockstore.h:
engine/buf.h:
engine/taskresult.h:
executor/shuffle.h:
executor/agg.h:
engine/taskresult.h:
