build/tests/unit/test_shuffle.o: tests/unit/test_shuffle.c \
 tests/unit/../test.h engine/err.h engine/recfmt.h engine/buf.h \
 include/ember.h executor/shuffle.h executor/agg.h engine/buf.h
tests/unit/../test.h:
engine/err.h:
engine/recfmt.h:
engine/buf.h:
include/ember.h:
executor/shuffle.h:
executor/agg.h:
engine/buf.h:
