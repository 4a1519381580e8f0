build/engine/fnref.o: engine/fnref.c include/ember.h engine/err.h \
 engine/fnref.h
include/ember.h:
engine/err.h:
engine/fnref.h:
