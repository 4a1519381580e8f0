build/tests/unit/test_conf.o: tests/unit/test_conf.c engine/conf.h \
 include/ember.h tests/unit/../test.h
engine/conf.h:
include/ember.h:
tests/unit/../test.h:
