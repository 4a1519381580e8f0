build/tests/api/helpers.o: tests/api/helpers.c tests/api/../test.h \
 tests/api/helpers.h include/ember.h
tests/api/../test.h:
tests/api/helpers.h:
include/ember.h:
