build/tests/api/test_basic.o: tests/api/test_basic.c tests/api/../test.h \
 include/ember.h tests/api/helpers.h
tests/api/../test.h:
include/ember.h:
tests/api/helpers.h:
