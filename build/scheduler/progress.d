build/scheduler/progress.o: scheduler/progress.c scheduler/progress.h
scheduler/progress.h:
