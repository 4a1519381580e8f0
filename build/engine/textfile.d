build/engine/textfile.o: engine/textfile.c include/ember.h engine/err.h \
 engine/textfile.h
include/ember.h:
engine/err.h:
engine/textfile.h:
