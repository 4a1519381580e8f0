build/engine/taskdesc.o: engine/taskdesc.c include/ember.h engine/err.h \
 engine/taskdesc.h engine/buf.h engine/fnref.h
include/ember.h:
engine/err.h:
engine/taskdesc.h:
engine/buf.h:
engine/fnref.h:
