build/engine/builtins.o: engine/builtins.c engine/builtins.h \
 include/ember.h engine/err.h engine/fnref.h engine/recfmt.h engine/buf.h
engine/builtins.h:
include/ember.h:
engine/err.h:
engine/fnref.h:
engine/recfmt.h:
engine/buf.h:
