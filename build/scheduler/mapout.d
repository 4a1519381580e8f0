build/scheduler/mapout.o: scheduler/mapout.c scheduler/mapout.h
scheduler/mapout.h:
