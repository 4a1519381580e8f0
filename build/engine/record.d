build/engine/record.o: engine/record.c include/ember.h engine/recfmt.h \
 engine/buf.h
include/ember.h:
engine/recfmt.h:
engine/buf.h:
