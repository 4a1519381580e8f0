build/tests/unit/test_progress.o: tests/unit/test_progress.c \
 scheduler/progress.h tests/unit/../test.h
scheduler/progress.h:
tests/unit/../test.h:
