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
# Link-time optimization lets the per-record path inline across files (emit
# -> shuffle sink -> combine table -> hash): 12% on bench/wordcount.  Fat
# objects keep libember.a usable by programs linked without LTO.
OPT ?= -O2 -g -flto=auto -ffat-lto-objects
AR = gcc-ar
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN += -Werror
endif
SAN ?=
CFLAGS_ALL = -std=gnu11 $(OPT) $(WARN) $(SAN) -fPIC -pthread -D_GNU_SOURCE \
	-Iinclude -Iengine -Ischeduler -Iexecutor -Imllib $(CFLAGS)
LIBS = -luv -lmsgpackc -lopenblas -lz -lsodium -lpthread -ldl -lm
LDFLAGS_ALL = $(SAN) $(LDFLAGS)

LIB_SRC = $(wildcard engine/*.c scheduler/*.c executor/*.c mllib/*.c)
LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC = $(wildcard tests/*.c tests/unit/*.c tests/api/*.c tests/ml/*.c)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
EXAMPLES = $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
BENCHES = $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
DEPS_STAMP = $(BUILD)/.deps-ok

.PHONY: all deps lib examples benches test test-sanitize install clean run-example

all: lib examples benches $(BUILD)/tests/run_tests

# Install Debian packages once if any header is missing.
deps: $(DEPS_STAMP)
$(DEPS_STAMP):
	@mkdir -p $(BUILD)
	@for h in uv.h msgpack.h cblas.h zlib.h sodium.h; do \
	  if ! echo "#include <$$h>" | $(CC) -E -x c - >/dev/null 2>&1; then \
	    echo "missing $$h: installing dependencies"; sh scripts/install-deps.sh || exit 1; break; \
	  fi; done
	@touch $@

lib: $(BUILD)/libember.a $(BUILD)/libember.so

$(BUILD)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/libember.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/libember.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libember.so.0 -o $@ $^ $(LDFLAGS_ALL) $(LIBS)
	ln -sf libember.so $(BUILD)/libember.so.0

examples: $(EXAMPLES)
$(BUILD)/examples/%: examples/%.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Iinclude $< -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)

benches: $(BENCHES)
$(BUILD)/bench/%: bench/%.c $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< -o $@ $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)

$(BUILD)/tests/run_tests: $(TEST_OBJ) $(BUILD)/libember.a
	$(CC) -o $@ $(TEST_OBJ) $(BUILD)/libember.a $(LDFLAGS_ALL) $(LIBS)

# Examples linked against libember.so: there user functions are named by
# image offset and mllib's by exported symbol (engine/fnref.c), a path the
# statically linked tests do not take.
SHARED_CHECK = $(BUILD)/shared/wordcount $(BUILD)/shared/logreg
$(BUILD)/shared/%: examples/%.c $(BUILD)/libember.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $< -o $@ -L$(BUILD) -lember -lm $(LDFLAGS_ALL)

# The test command README gives and CI runs.
test: $(BUILD)/tests/run_tests $(EXAMPLES) $(SHARED_CHECK)
	LD_LIBRARY_PATH=$(BUILD) $(BUILD)/shared/wordcount tests/data/words.txt 3 > /dev/null
	LD_LIBRARY_PATH=$(BUILD) $(BUILD)/shared/logreg --lbfgs --l2 0.001 > /dev/null 2>&1
	cd $(CURDIR) && $(BUILD)/tests/run_tests $(T)

test-sanitize:
	$(MAKE) BUILD=build-san OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" test

# Build, then run the main examples on local[*] (README's first command):
# word count, and logistic regression on the breast cancer data.
run-example: all
	$(BUILD)/examples/wordcount tests/data/words.txt 10
	$(BUILD)/examples/logreg

install: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/ember.h include/ember_ml.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libember.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libember.so $(DESTDIR)$(PREFIX)/lib/libember.so.0
	ln -sf libember.so.0 $(DESTDIR)$(PREFIX)/lib/libember.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBS@|$(LIBS)|' ember.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ember.pc

clean:
	rm -rf build build-san

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
