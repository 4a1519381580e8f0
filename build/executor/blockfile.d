build/executor/blockfile.o: executor/blockfile.c executor/blockfile.h \
 engine/buf.h include/ember.h engine/err.h engine/recfmt.h engine/buf.h
executor/blockfile.h:
engine/buf.h:
include/ember.h:
engine/err.h:
engine/recfmt.h:
engine/buf.h:
