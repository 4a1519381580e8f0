# ember -- build everything with `make`, test with `make test`.
#
# Warning set (fixed): -Wall -Wextra -Wshadow -Wstrict-prototypes
# -Wmissing-prototypes -Wno-unused-parameter, and -Werror in CI via WERROR=1.
# `make test-sanitize` builds the library and tests with ASan+UBSan into
# build-san/ and runs the suite.  Dependencies are Debian packages; when a
# header is missing, scripts/install-deps.sh installs them (as root, or with
# sudo).

PREFIX ?= /usr/local
CC ?= cc
BUILD ?= build
# Link-time optimization runs when libember.so is linked and when libember.a's
# one object is (see the library rules): it inlines across the library's
# files.  It does not run over a program and the library together (their
# internals are sealed off), so the API calls in a program's own functions
# stay calls.  -fPIC's semantic interposition would forbid inlining an
# exported function (em_emit, called by em_emit_i64 and em_emit_pair) into
# the library's own callers; -fno-semantic-interposition says nobody
# replaces one, which keeps the sealed library about as fast as the program
# and the library's objects linked together (bench/RESULTS.md).  Fat objects
# keep the individual objects linkable without LTO too.
OPT ?= -O2 -g -flto=auto -ffat-lto-objects
AR = gcc-ar
OBJCOPY = objcopy
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN += -Werror
endif
SAN ?=
CFLAGS_ALL = -std=gnu11 $(OPT) $(WARN) $(SAN) -fPIC -pthread -D_GNU_SOURCE \
	-Iinclude -Iengine -Ischeduler -Iexecutor -Imllib $(CFLAGS)
# libuv carries cluster mode's connections (engine/conn.c).  Debian names
# its static archive libuv_a.a (pkg-config libuv-static): a fully static
# link asks for that one.
LIBS = -luv -lmsgpackc -lopenblas -lz -llz4 -lzstd -lxxhash -lsodium -lpthread -ldl -lm
LIBS_FULL_STATIC = $(subst -luv ,-luv_a ,$(LIBS)) -lrt
LDFLAGS_ALL = $(SAN) $(LDFLAGS)

# A daemon's main (*_main.c) is not part of the library: it makes bin/.
LIB_SRC = $(filter-out %_main.c,$(wildcard engine/*.c scheduler/*.c executor/*.c mllib/*.c))
DAEMONS = $(BUILD)/bin/ember-master $(BUILD)/bin/ember-worker $(BUILD)/bin/ember-history-server
LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC = $(wildcard tests/*.c tests/unit/*.c tests/api/*.c tests/ml/*.c tests/sim/*.c)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
EXAMPLES = $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
FAULT_DRIVER = $(BUILD)/tests/cluster/fault_driver
UI_APP = $(BUILD)/tests/ui_app
BENCHES = $(patsubst bench/%.c,$(BUILD)/bench/%,$(filter-out bench/scale.c,$(wildcard bench/*.c)))
DEPS_STAMP = $(BUILD)/.deps-ok

.PHONY: all deps lib examples benches daemons test test-sanitize test-tsan install clean run-example fuzz fuzz-run fuzz-replay coverage

all: lib examples benches daemons $(BUILD)/tests/run_tests $(FAULT_DRIVER) $(UI_APP)

# Install Debian packages once if any header is missing.
deps: $(DEPS_STAMP)
$(DEPS_STAMP):
	@mkdir -p $(BUILD)
	@for h in uv.h msgpack.h cblas.h zlib.h lz4.h zstd.h xxhash.h sodium.h; do \
	  if ! echo "#include <$$h>" | $(CC) -E -x c - >/dev/null 2>&1; then \
	    echo "missing $$h: installing dependencies"; sh scripts/install-deps.sh || exit 1; break; \
	  fi; done
	@touch $@

lib: $(BUILD)/libember.a $(BUILD)/libember.so

$(BUILD)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# The library exports only the em_* API.  Its objects are compiled with
# hidden visibility and ember.h marks the API with EM_API, so libember.so
# exports exactly that.  libember.a holds two objects, the core (engine/,
# scheduler/, executor/) and mllib, each its files partially linked (-r;
# with LTO, optimized across files there and emitted as plain code by
# -flinker-output=nolto-rel, so any linker and clang can use it); then
# scripts/seal-lib.sh makes every hidden name local, but for the few core
# functions mllib calls, which it renames into the reserved em__ prefix.
# No internal name (rm_tree, ctx_run, ml_*) is left for a program's own
# function to collide with or replace, and a program that calls no em_ml_*
# function does not pull in mllib, so it does not load OpenBLAS (whose
# threads start and spin at load, taking CPU time from the tasks).  The
# tests and fuzz replays, which call internal functions, link the
# individual objects instead.
# -fno-semantic-interposition: nobody may replace an em_* function of
# libember.so by interposition (see OPT above for what it is worth).
$(LIB_OBJ): CFLAGS_ALL += -fvisibility=hidden -fno-semantic-interposition

# The library objects also depend on the flags they are compiled with, so
# that a change of flags (visibility, OPT) rebuilds them rather than leaving
# stale objects in an existing build directory.
$(BUILD)/.lib-flags: FORCE
	@mkdir -p $(BUILD)
	@f='$(CC) $(filter-out -Werror,$(CFLAGS_ALL))'; [ "$$f" = "$$(cat $@ 2>/dev/null)" ] || echo "$$f" > $@
$(LIB_OBJ): $(BUILD)/.lib-flags
.PHONY: FORCE
FORCE:

CORE_OBJ = $(filter-out $(BUILD)/mllib/%,$(LIB_OBJ))
ML_OBJ = $(filter $(BUILD)/mllib/%,$(LIB_OBJ))
PARTIAL_LINK = $(CC) $(filter-out --coverage,$(CFLAGS_ALL)) -r -nostdlib $(if $(findstring -flto,$(OPT)),-flinker-output=nolto-rel)
$(BUILD)/sealed/core.r.o: $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(PARTIAL_LINK) -o $@ $^
$(BUILD)/sealed/ml.r.o: $(ML_OBJ)
	@mkdir -p $(dir $@)
	$(PARTIAL_LINK) -o $@ $^
$(BUILD)/sealed/ember_core.o $(BUILD)/sealed/ember_ml.o &: $(BUILD)/sealed/core.r.o $(BUILD)/sealed/ml.r.o scripts/seal-lib.sh
	sh scripts/seal-lib.sh $(OBJCOPY) $(BUILD)/sealed/core.r.o $(BUILD)/sealed/ml.r.o \
	  $(BUILD)/sealed/ember_core.o $(BUILD)/sealed/ember_ml.o

$(BUILD)/libember.a: $(BUILD)/sealed/ember_core.o $(BUILD)/sealed/ember_ml.o
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/libember.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libember.so.0 -o $@ $^ $(LDFLAGS_ALL) $(LIBS)
	ln -sf libember.so $(BUILD)/libember.so.0

examples: $(EXAMPLES)
$(BUILD)/examples/%: examples/%.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Iinclude $< -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)

# The fault scenarios across hosts that tests/cluster/netns.sh runs: a
# driver program using only ember.h, linked as the examples are.
$(FAULT_DRIVER): tests/cluster/fault_driver.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Iinclude $< -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)

# The browser test (tests/ui/run.sh): headless Chromium from Debian (the
# script installs chromium and chromium-driver when missing) looks at the
# pages of a running driver and of the history server; screenshots land in
# $(BUILD)/ui/.
$(UI_APP): tests/ui/ui_app.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Iinclude $< -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)
.PHONY: test-ui
test-ui: $(UI_APP) $(DAEMONS)
	sh tests/ui/run.sh $(BUILD)

# Benchmarks link libember.a, as a user's program does.  bench/logreg also
# links its C reference (bench/ref/fused.c), the one file compiled for this
# machine (-O3 -march=native) so the reference is as fast as plain C gets;
# the library itself stays portable.  bench/wordcount runs the word-count
# reference (bench/ref/wc_limit.c), a program of its own that it finds
# beside itself, built with -O2 as ../shared/refs/README.md builds it.
# bench/scale links the simulated cluster of the tests (tests/sim/sim.h)
# and, as the tests do, the library's objects (its internals unsealed).
BENCH_REF = $(BUILD)/bench/ref/fused.o
BENCH_SIM = $(BUILD)/tests/sim/sim.o
WC_LIMIT = $(BUILD)/bench/wc_limit
benches: $(BENCHES) $(WC_LIMIT) $(BUILD)/bench/scale
$(BENCHES): $(BUILD)/bench/%: bench/%.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< $(if $(filter $(BUILD)/bench/logreg,$@),$(BENCH_REF)) -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)
$(BUILD)/bench/logreg: $(BENCH_REF)
$(BUILD)/bench/scale: bench/scale.c $(BENCH_SIM) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/sim $< $(BENCH_SIM) $(LIB_OBJ) -o $@ $(LDFLAGS_ALL) $(LIBS)
$(BENCH_REF): bench/ref/fused.c bench/ref/fused.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O3 -march=native -g $(WARN) -pthread -c $< -o $@
$(BUILD)/bench/wordcount: | $(WC_LIMIT)
$(WC_LIMIT): bench/ref/wc_limit.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) $< -o $@

$(BUILD)/tests/run_tests: $(TEST_OBJ) $(LIB_OBJ)
	$(CC) -o $@ $(TEST_OBJ) $(LIB_OBJ) $(LDFLAGS_ALL) $(LIBS)

# The injected-failure test (tests/failinject/failinject.c, docs/testing.md):
# the library's objects linked with wrappers that fail the n-th allocation,
# write, open, rename or fsync the library makes.  Only this binary has them.
FAILINJECT = $(BUILD)/tests/failinject/failinject
all: $(FAILINJECT)
FAILINJECT_WRAP = malloc calloc realloc strdup strndup posix_memalign write pwrite fwrite fclose \
	open openat fopen fdopen mkostemp mkdtemp mkdir rename link fsync fdatasync
$(FAILINJECT): $(BUILD)/tests/failinject/failinject.o $(BUILD)/tests/failinject/wrap.o $(LIB_OBJ)
	$(CC) -o $@ $^ $(foreach f,$(FAILINJECT_WRAP),-Wl,--wrap=$(f)) -rdynamic $(LDFLAGS_ALL) $(LIBS)

# Its run in `make test`: every scenario by every kind on local[1], and the
# I/O kinds again on local[2] (two task threads; the allocations, about 800
# runs, once are enough for the time).  Not under ThreadSanitizer
# (test-tsan), whose subject, races, the other tests cover; ASan's leak
# checker (test-sanitize) sees every error path the runs take.
FAILINJECT_RUN = $(if $(findstring thread,$(SAN)),@echo "failinject: not run under ThreadSanitizer", \
	cd $(CURDIR) && $(FAILINJECT) && $(FAILINJECT) -m 'local[2]' write open rename fsync)
.PHONY: test-failinject
test-failinject: $(FAILINJECT)
	$(FAILINJECT_RUN)

# Daemons: a main of a few lines over the library's objects.
daemons: $(DAEMONS)
$(BUILD)/bin/ember-master: scheduler/masterd_main.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< -o $@ $(LIB_OBJ) $(LDFLAGS_ALL) $(LIBS)
$(BUILD)/bin/ember-worker: executor/worker_main.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< -o $@ $(LIB_OBJ) $(LDFLAGS_ALL) $(LIBS)
$(BUILD)/bin/ember-history-server: engine/historyd_main.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< -o $@ $(LIB_OBJ) $(LDFLAGS_ALL) $(LIBS)

# Examples linked against libember.so: there user functions are named by
# offset from the program's image and mllib's by offset from libember.so's
# (engine/fnref.c: FN_EMBER, no exported symbol needed), a path the
# statically linked tests do not take.
SHARED_CHECK = $(BUILD)/shared/wordcount $(BUILD)/shared/logreg
$(BUILD)/shared/%: examples/%.c $(BUILD)/libember.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< -o $@ -L$(BUILD) -lember -lm $(LDFLAGS_ALL)

# A driver linked against libember.so and a shared library of its own,
# found through LD_LIBRARY_PATH only (no run path), for
# tests/cluster/scripts.sh: a worker that cannot load that library fails the
# application at its first executor launch.
NEEDLIB = $(BUILD)/shared/needlib
$(BUILD)/shared/extra/libneedlib_extra.so: tests/cluster/needlib_extra.c tests/cluster/needlib_extra.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -shared -Wl,-soname,libneedlib_extra.so $< -o $@ $(LDFLAGS_ALL)
$(NEEDLIB): tests/cluster/needlib.c $(BUILD)/libember.so $(BUILD)/shared/extra/libneedlib_extra.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/cluster $< -o $@ -L$(BUILD) -L$(BUILD)/shared/extra -lneedlib_extra -lember $(LDFLAGS_ALL)

# Link checks (tests/link/check.sh): libember exports only the API, and a
# driver defining functions named like ember internals (tests/link/collide.c)
# is unaffected, linked against libember.a, against libember.so exporting
# them (-rdynamic), and fully static (-static; not with sanitizers, whose
# runtimes cannot be linked statically).
.PHONY: test-link
LINK_VARIANTS = static shared $(if $(SAN),,full-static)
$(BUILD)/link/collide-static: tests/link/collide.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)
$(BUILD)/link/collide-shared: tests/link/collide.c $(BUILD)/libember.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -rdynamic $< -o $@ -L$(BUILD) -lember $(LDFLAGS_ALL)
$(BUILD)/link/collide-full-static: tests/link/collide.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -static $< -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS_FULL_STATIC)
test-link: $(LINK_VARIANTS:%=$(BUILD)/link/collide-%) $(BUILD)/libember.so $(BUILD)/libember.a
	SANITIZED="$(SAN)" sh tests/link/check.sh $(BUILD) $(LINK_VARIANTS)

# The programming guide's code blocks, in order, form one C file that must
# compile without a warning (docs/programming-guide.md says so); the docs'
# shell command examples must still run (tests/docs/check.sh), the
# benchmark docs/monitoring.md shows among them.
.PHONY: test-docs
test-docs: $(DAEMONS) $(EXAMPLES) $(BUILD)/bench/history $(FAILINJECT)
	@mkdir -p $(BUILD)/docs
	awk '/^```c$$/{f=1;next}/^```$$/{f=0}f' docs/programming-guide.md > $(BUILD)/docs/guide.c
	$(CC) -std=gnu11 -c -Iinclude -Wall -Wextra -Werror $(BUILD)/docs/guide.c -o $(BUILD)/docs/guide.o
	sh tests/docs/check.sh $(BUILD)

# The local-cluster pass's tests (default: the same as T's, all).
LC_T ?= $(T)

# The cluster across network namespaces alone (tests/cluster/netns.sh, which
# `make test` runs too): word count and the fault scenarios, each worker a
# host of its own; it says "skip" where namespaces cannot be made.
.PHONY: test-netns
test-netns: $(DAEMONS) $(BUILD)/examples/wordcount $(BUILD)/shared/wordcount $(FAULT_DRIVER)
	cd $(CURDIR) && sh tests/cluster/netns.sh $(BUILD)

# ember on a one-node Slurm made on this machine (tests/cluster/slurm.sh):
# installs Debian's slurm-wlm and munge when missing.
.PHONY: test-slurm
test-slurm: $(DAEMONS) $(BUILD)/examples/wordcount $(BUILD)/examples/pi
	cd $(CURDIR) && sh tests/cluster/slurm.sh $(BUILD)

# The layers' one-way rule (docs/architecture.md): over the #include lines,
# and over the calls between the library's objects.
.PHONY: test-layers
test-layers: $(LIB_OBJ)
	sh tests/layers/check.sh $(BUILD)

# The test command README gives and CI runs.
test: $(BUILD)/tests/run_tests $(FAILINJECT) $(DAEMONS) $(EXAMPLES) $(FAULT_DRIVER) $(SHARED_CHECK) $(NEEDLIB) fuzz-replay test-link test-docs test-layers
	cd $(CURDIR) && sh tests/examples/run.sh $(BUILD)
	cd $(CURDIR) && sh tests/cluster/scripts.sh $(BUILD)
	cd $(CURDIR) && sh tests/cluster/netns.sh $(BUILD)
	$(FAILINJECT_RUN)
	cd $(CURDIR) && $(BUILD)/tests/run_tests $(T)
	@echo "the same suite against local-cluster[2,1,1024] (processes over TCP):"
	cd $(CURDIR) && EMBER_TEST_MASTER='local-cluster[2,1,1024]' $(BUILD)/tests/run_tests $(LC_T)

# The suite under ASan and UBSan (build-san/): the local pass whole, and of
# the local-cluster pass the tests test-tsan runs there (TSAN_LC_T below:
# the executor processes' own code, the wire and the kills); the rest run
# the same code on local[N] (on a slow host the tests left out take 6.6 of
# the step's 27 minutes).
test-sanitize:
	$(MAKE) BUILD=build-san OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  LC_T="$(if $(T),$(T),$(TSAN_LC_T))" test

# The suite under ThreadSanitizer (build-tsan/): data races between the
# driver, the executor threads and em_cancel_all's caller.  halt_on_error
# makes the first report fail the run.  Every process reports to
# build-tsan/tsan-reports/ (daemons and executors too, whose stderr is a log
# file), and any report there fails the target.  The local-cluster pass runs
# the cluster, API, wide, job and kill tests (about 7 minutes here; all of
# them would take 45).  tests/tsan.supp says why libuv's own calls are
# ignored.
TSAN_LC_T = cluster_ api_ wide_ jobs_ kill_
test-tsan:
	rm -rf $(CURDIR)/build-tsan/tsan-reports && mkdir -p $(CURDIR)/build-tsan/tsan-reports
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp log_path=$(CURDIR)/build-tsan/tsan-reports/r $(TSAN_OPTIONS)" \
	  $(MAKE) BUILD=build-tsan OPT="-O1 -g -fno-omit-frame-pointer" SAN="-fsanitize=thread" \
	  LC_T="$(if $(T),$(T),$(TSAN_LC_T))" test || { cat $(CURDIR)/build-tsan/tsan-reports/* 2>/dev/null; exit 1; }
	@if ls $(CURDIR)/build-tsan/tsan-reports/* >/dev/null 2>&1; then \
	  cat $(CURDIR)/build-tsan/tsan-reports/*; echo "ThreadSanitizer reported (above)"; exit 1; fi

# Coverage (docs/testing.md): `make test` built with gcc's --coverage into
# build-cov/, its local-cluster pass the tests test-tsan runs there (the
# rest run the same code on local[N]), then line and branch coverage per
# folder and file (tests/coverage/report.sh, gcov alone), kept in
# build-cov/coverage.txt.
.PHONY: coverage
coverage:
	@mkdir -p build-cov && find build-cov -name '*.gcda' -delete
	$(MAKE) BUILD=build-cov OPT="-O0 -g" SAN="--coverage -DEMBER_COVERAGE" \
	  LC_T="$(if $(T),$(T),$(TSAN_LC_T))" test
	sh tests/coverage/report.sh build-cov build-cov/coverage.txt

# Fuzzing (docs/testing.md).  tests/fuzz/fuzz_NAME.c is a libFuzzer target
# and tests/fuzz/corpus/NAME/ its seeds plus every crash ever found; both
# are found by wildcard.  `make test` replays each corpus with
# $(BUILD)/tests/fuzz/replay_NAME (the target linked with replay.c by
# $(CC)), so no clang is needed there.  `make fuzz` builds the targets with
# clang, libFuzzer, ASan and UBSan under $(BUILD)/fuzz/ and runs each for
# FUZZ_SECONDS on a working copy of its corpus ($(BUILD)/fuzz/corpus/NAME;
# crashes land in $(BUILD)/fuzz/crashes/NAME/, logs in $(BUILD)/fuzz/logs/).
# FUZZ_TARGETS picks some: `make fuzz FUZZ_TARGETS=text FUZZ_SECONDS=600`.
FUZZ_NAMES = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_FLAGS ?= -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=1024
FUZZ_OBJ = $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/fuzz_%.o) $(BUILD)/tests/fuzz/support.o $(BUILD)/tests/fuzz/replay.o
FUZZ_REPLAY = $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/replay_%)
.SECONDARY: $(FUZZ_OBJ) $(FUZZ_NAMES:%=$(BUILD)/bin/fuzz_%)

# A replay is linked from the objects' own machine code (-fno-lto; the
# objects are fat): 24 link-time optimizations of the whole library would
# cost minutes of every `make test` and buy a replay nothing.
$(BUILD)/tests/fuzz/replay_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/replay.o $(BUILD)/tests/fuzz/support.o $(LIB_OBJ)
	$(CC) -fno-lto -o $@ $^ $(LDFLAGS_ALL) $(LIBS)

fuzz-replay: $(FUZZ_REPLAY)
	@set -e; for n in $(FUZZ_NAMES); do $(BUILD)/tests/fuzz/replay_$$n tests/fuzz/corpus/$$n; done

fuzz:
	$(MAKE) BUILD=$(BUILD)/fuzz CC=$(FUZZ_CC) OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  CFLAGS="$(CFLAGS) -fsanitize=fuzzer-no-link" fuzz-run

# Run by `make fuzz` with BUILD=$(BUILD)/fuzz and clang.
$(BUILD)/bin/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/support.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -fsanitize=fuzzer -o $@ $^ $(LDFLAGS_ALL) $(LIBS)

fuzz-run: $(FUZZ_TARGETS:%=$(BUILD)/bin/fuzz_%)
	@mkdir -p $(BUILD)/logs; failed=; for n in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD)/corpus/$$n $(BUILD)/crashes/$$n; \
	  cp -R tests/fuzz/corpus/$$n/. $(BUILD)/corpus/$$n/; \
	  echo "fuzz $$n: $(FUZZ_SECONDS) s, log in $(BUILD)/logs/$$n.log"; \
	  if $(BUILD)/bin/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) \
	      -artifact_prefix=$(BUILD)/crashes/$$n/ $(BUILD)/corpus/$$n > $(BUILD)/logs/$$n.log 2>&1; then \
	    grep -E '^#[0-9]+[[:space:]]+DONE' $(BUILD)/logs/$$n.log | tail -n 1; \
	  else \
	    tail -n 60 $(BUILD)/logs/$$n.log; failed="$$failed $$n"; \
	    echo "fuzz $$n FAILED: the input is in $(BUILD)/crashes/$$n/"; \
	  fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz failed:$$failed"; exit 1; fi

# Build, then run the main examples on local[*] (README's first command):
# word count, and logistic regression on the breast cancer data.
run-example: all
	$(BUILD)/examples/wordcount tests/data/words.txt 10
	$(BUILD)/examples/logreg

install: lib daemons
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/conf
	install -m 755 $(DAEMONS) scripts/ember-submit $(DESTDIR)$(PREFIX)/bin/
	install -m 755 scripts/ember-daemon.sh scripts/start-master.sh scripts/stop-master.sh \
	  scripts/start-worker.sh scripts/stop-worker.sh scripts/start-history-server.sh \
	  scripts/stop-history-server.sh scripts/ember-slurm.sh $(DESTDIR)$(PREFIX)/sbin/
	install -m 644 conf/ember-defaults.conf.template $(DESTDIR)$(PREFIX)/conf/
	install -m 644 include/ember.h include/ember_ml.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libember.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libember.so $(DESTDIR)$(PREFIX)/lib/libember.so.0
	ln -sf libember.so.0 $(DESTDIR)$(PREFIX)/lib/libember.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBS@|$(LIBS_FULL_STATIC)|' ember.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ember.pc

clean:
	rm -rf build build-san build-tsan

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d) $(BUILD)/tests/failinject/failinject.d $(BUILD)/tests/failinject/wrap.d
