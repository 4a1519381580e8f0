build/executor/local.o: executor/local.c engine/err.h executor/local.h \
 scheduler/backend.h engine/taskresult.h executor/runner.h \
 engine/blockstore.h engine/buf.h include/ember.h
engine/err.h:
executor/local.h:
scheduler/backend.h:
engine/taskresult.h:
executor/runner.h:
engine/blockstore.h:
engine/buf.h:
include/ember.h:
