build/executor/text_reader.o: executor/text_reader.c engine/buf.h \
 include/ember.h engine/err.h executor/text_reader.h executor/agg.h \
 engine/textfile.h
engine/buf.h:
include/ember.h:
engine/err.h:
executor/text_reader.h:
executor/agg.h:
engine/textfile.h:
