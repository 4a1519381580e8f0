build/tests/unit/test_textfile.o: tests/unit/test_textfile.c engine/buf.h \
 include/ember.h tests/unit/../test.h executor/text_reader.h \
 executor/agg.h engine/textfile.h
engine/buf.h:
include/ember.h:
tests/unit/../test.h:
executor/text_reader.h:
executor/agg.h:
engine/textfile.h:
