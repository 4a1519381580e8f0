build/tests/unit/test_blockfile.o: tests/unit/test_blockfile.c \
 executor/blockfile.h engine/buf.h include/ember.h engine/recfmt.h \
 engine/buf.h tests/unit/../test.h
executor/blockfile.h:
engine/buf.h:
include/ember.h:
engine/recfmt.h:
engine/buf.h:
tests/unit/../test.h:
