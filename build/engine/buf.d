build/engine/buf.o: engine/buf.c engine/buf.h include/ember.h
engine/buf.h:
include/ember.h:
