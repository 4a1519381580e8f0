build/engine/lineage.o: engine/lineage.c engine/buf.h engine/err.h \
 engine/rdd.h include/ember.h engine/taskdesc.h engine/fnref.h \
 engine/textfile.h
engine/buf.h:
engine/err.h:
engine/rdd.h:
include/ember.h:
engine/taskdesc.h:
engine/fnref.h:
engine/textfile.h:
