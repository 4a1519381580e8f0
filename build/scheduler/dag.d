build/scheduler/dag.o: scheduler/dag.c scheduler/dag.h \
 scheduler/backend.h engine/taskresult.h include/ember.h \
 scheduler/mapout.h engine/rdd.h engine/buf.h engine/taskdesc.h \
 engine/fnref.h engine/textfile.h engine/taskdesc.h engine/err.h \
 engine/fnref.h scheduler/progress.h scheduler/taskbuild.h engine/buf.h \
 engine/vars.h engine/taskresult.h
scheduler/dag.h:
scheduler/backend.h:
engine/taskresult.h:
include/ember.h:
scheduler/mapout.h:
engine/rdd.h:
engine/buf.h:
engine/taskdesc.h:
engine/fnref.h:
engine/textfile.h:
engine/taskdesc.h:
engine/err.h:
engine/fnref.h:
scheduler/progress.h:
scheduler/taskbuild.h:
engine/buf.h:
engine/vars.h:
engine/taskresult.h:
