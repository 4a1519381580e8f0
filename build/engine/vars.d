build/engine/vars.o: engine/vars.c engine/ctx.h include/ember.h \
 engine/taskdesc.h engine/buf.h engine/fnref.h engine/err.h engine/vars.h \
 engine/taskresult.h
engine/ctx.h:
include/ember.h:
engine/taskdesc.h:
engine/buf.h:
engine/fnref.h:
engine/err.h:
engine/vars.h:
engine/taskresult.h:
