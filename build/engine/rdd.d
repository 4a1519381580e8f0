build/engine/rdd.o: engine/rdd.c engine/blockstore.h engine/builtins.h \
 include/ember.h engine/conf.h engine/ctx.h engine/taskdesc.h \
 engine/buf.h engine/fnref.h engine/err.h engine/rdd.h engine/textfile.h \
 engine/recfmt.h executor/shuffle.h executor/agg.h engine/buf.h \
 engine/taskresult.h
engine/blockstore.h:
engine/builtins.h:
include/ember.h:
engine/conf.h:
engine/ctx.h:
engine/taskdesc.h:
engine/buf.h:
engine/fnref.h:
engine/err.h:
engine/rdd.h:
engine/textfile.h:
engine/recfmt.h:
executor/shuffle.h:
executor/agg.h:
engine/buf.h:
engine/taskresult.h:
