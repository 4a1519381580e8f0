build/engine/conf.o: engine/conf.c engine/conf.h include/ember.h \
 engine/err.h
engine/conf.h:
include/ember.h:
engine/err.h:
