build/scheduler/taskbuild.o: scheduler/taskbuild.c engine/err.h \
 scheduler/taskbuild.h engine/buf.h scheduler/mapout.h engine/rdd.h \
 engine/buf.h include/ember.h engine/taskdesc.h engine/fnref.h \
 engine/textfile.h engine/taskdesc.h
engine/err.h:
scheduler/taskbuild.h:
engine/buf.h:
scheduler/mapout.h:
engine/rdd.h:
engine/buf.h:
include/ember.h:
engine/taskdesc.h:
engine/fnref.h:
engine/textfile.h:
engine/taskdesc.h:
