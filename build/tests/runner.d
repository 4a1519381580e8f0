build/tests/runner.o: tests/runner.c tests/test.h
tests/test.h:
