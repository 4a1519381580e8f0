build/engine/error.o: engine/error.c include/ember.h engine/err.h
include/ember.h:
engine/err.h:
