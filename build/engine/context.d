build/engine/context.o: engine/context.c engine/blockstore.h \
 engine/conf.h include/ember.h engine/ctx.h engine/taskdesc.h \
 engine/buf.h engine/fnref.h scheduler/dag.h scheduler/backend.h \
 engine/taskresult.h scheduler/mapout.h engine/rdd.h engine/textfile.h \
 engine/taskdesc.h engine/err.h executor/local.h scheduler/backend.h \
 executor/runner.h engine/blockstore.h engine/buf.h engine/rdd.h \
 executor/runner.h engine/vars.h engine/taskresult.h
engine/blockstore.h:
engine/conf.h:
include/ember.h:
engine/ctx.h:
engine/taskdesc.h:
engine/buf.h:
engine/fnref.h:
scheduler/dag.h:
scheduler/backend.h:
engine/taskresult.h:
scheduler/mapout.h:
engine/rdd.h:
engine/textfile.h:
engine/taskdesc.h:
engine/err.h:
executor/local.h:
scheduler/backend.h:
executor/runner.h:
engine/blockstore.h:
engine/buf.h:
engine/rdd.h:
executor/runner.h:
engine/vars.h:
engine/taskresult.h:
