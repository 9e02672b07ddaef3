# samtools rocksort -- build against htslib 1.24 and the system RocksDB.
#
# htslib: by default the bundled build, htslib 1.24 from a pinned source
# archive, compiled once into htslib/ by scripts/htslib.sh.  HTSLIB=system
# uses a system htslib found by pkg-config instead, and refuses one older
# than 1.24.
CC       ?= cc
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror=implicit-function-declaration -pthread
# One C++ file (temp_env.cc) uses RocksDB's C++ API, which needs C++17;
# it brings the C++ runtime, so the programs that hold it link with $(CXX).
CXX      ?= c++
CXXFLAGS ?= -O2 -g
CXXFLAGS += -std=c++17 -Wall -Wextra -pthread
# For links by the C driver, where C sources are compiled on the same line.
CXX_RUNTIME = -lstdc++
# The version is the samtools release whose output rocksort matches, then
# rocksort's own: 1.24+rocksort.0.3.0.  Pipelines that parse `samtools
# --version` (nf-core: the first line's last word) get a number that sorts
# with samtools' own, and the name says which sort this is.
SAMTOOLS_MATCHED = 1.24
VERSION   = 0.3.0
FULL_VERSION = $(SAMTOOLS_MATCHED)+rocksort.$(VERSION)
HTSLIB   ?= bundled
HTSLIB_MIN = 1.24

# libdeflate compresses every BGZF block, most of a sort's CPU at the default
# level.  It is linked from Debian's static archive (libdeflate-dev): the
# same code as the shared libdeflate.so.0, with the same bytes out, but the
# shared object compresses markedly slower (bench/probe/deflate_probe.c,
# bench/RESULTS.md).  HTSLIB=system cannot do this: a shared libhts.so
# brings its own libdeflate.so, and `make` prints which.
DEFLATE_LIBS = -Wl,-Bstatic -ldeflate -Wl,-Bdynamic

ifeq ($(HTSLIB),system)
  ifneq ($(shell pkg-config --atleast-version=$(HTSLIB_MIN) htslib && echo ok),ok)
    $(error HTSLIB=system needs htslib >= $(HTSLIB_MIN) from pkg-config, found \
      '$(shell pkg-config --modversion htslib 2>/dev/null || echo none)'. Older htslib \
      parses some files differently from samtools 1.24; run plain `make` to build the \
      bundled htslib $(HTSLIB_MIN))
  endif
  HTS_CPPFLAGS := $(shell pkg-config --cflags htslib) -DROCKSORT_NO_RANS
  HTS_LIBS     := $(shell pkg-config --libs htslib)
  HTS_LIB_FILE :=
  $(info HTSLIB=system: linking $(HTS_LIBS), the system's shared htslib with whatever \
    libdeflate it was linked with (Debian: the shared libdeflate.so.0, slower than the \
    static archive the default build links))
else ifeq ($(HTSLIB),bundled)
  HTS_CPPFLAGS := -Ihtslib -Ihtslib/htscodecs
  HTS_LIBS     := htslib/libhts.a $(DEFLATE_LIBS) -llzma -lbz2 -lz
  HTS_LIB_FILE := htslib/libhts.a
else
  $(error HTSLIB must be 'bundled' (the default) or 'system', not '$(HTSLIB)')
endif

# glibc's extensions (asprintf, O_DIRECT, memfd_create, pthread_setname_np,
# ...) for every file the Makefile compiles, the tests' and fuzz targets'
# too: defined once here, not in each file.
CPPFLAGS += -D_GNU_SOURCE
CPPFLAGS += -I. $(HTS_CPPFLAGS) $(shell pkg-config --cflags rocksdb) -DROCKSORT_VERSION='"$(FULL_VERSION)"' \
            -DROCKSDB_VERSION_STR='"$(shell pkg-config --modversion rocksdb)"'
LDLIBS   += $(HTS_LIBS) $(shell pkg-config --libs rocksdb) -lzstd -lm -lpthread -ldl
PREFIX   ?= /usr/local
MANDIR   ?= $(PREFIX)/share/man
PYTHON    = .venv/bin/python

# The engine: every object but main's, built once into a static library
# that the binary, the C unit tests and the replayed fuzz targets link (as
# samtools links its libst.a).
# Every C and C++ source of the layers' folders is in it: a new file needs
# no entry here.
LAYER_DIRS = util disk keys codec resume store load output readout engine cli
LAYER_SRCS = $(foreach d,$(LAYER_DIRS),$(wildcard $(d)/*.c $(d)/*.cc))
LIB_OBJS = $(addsuffix .o,$(basename $(LAYER_SRCS)))

OBJS = bamtk.o $(LIB_OBJS)
ENGINE_LIB = librocksort.a
# The C unit tests: every test/test_*.c is one program, linked with the
# engine; test/run_tests.py runs each that is built.
UNIT_PROGS = $(patsubst %.c,%,$(wildcard test/test_*.c))

.DEFAULT_GOAL := all
htslib: $(HTS_LIB_FILE)

.PHONY: all htslib demo test deps test-deps clean install bench asan test-asan test-valgrind fuzz fuzz-run

all: samtools

$(ENGINE_LIB): $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

samtools: bamtk.o $(ENGINE_LIB) $(HTS_LIB_FILE)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ bamtk.o $(ENGINE_LIB) $(LDLIBS)

# Every object needs htslib's headers, so the bundled build comes first.
%.o: %.c | $(HTS_LIB_FILE)
	$(CC) $(CFLAGS) $(CPPFLAGS) -MMD -MP -c -o $@ $<

%.o: %.cc | $(HTS_LIB_FILE)
	$(CXX) $(CXXFLAGS) $(CPPFLAGS) -MMD -MP -c -o $@ $<

htslib/libhts.a: scripts/htslib.sh
	bash scripts/htslib.sh

-include $(OBJS:.o=.d)

# The engine holds RocksDB's C++ side (temp_env.cc), so the C driver asks
# for the C++ runtime by name.
test/test_%: test/test_%.c $(ENGINE_LIB) $(HTS_LIB_FILE)
	$(CC) $(CFLAGS) $(CPPFLAGS) -Itest -o $@ $< $(ENGINE_LIB) $(LDLIBS) $(CXX_RUNTIME)

deps:
	@bash scripts/deps.sh build

test-deps:
	@bash scripts/deps.sh test

# The README's first command: build, then sort the bundled example.
demo: deps
	$(MAKE) samtools
	./samtools rocksort -m 1M -o example/example.sorted.bam example/example.sam
	./samtools view -H example/example.sorted.bam | grep -v '^@SQ' | head -5
	./samtools view example/example.sorted.bam | cut -f 1-6 | head -20

# The tests only run here: scripts/test.sh (README command 2) installs
# what they need first, through scripts/deps.sh.
NEEDS_VENV = @test -x $(PYTHON) || { echo "$(PYTHON) is missing: run scripts/deps.sh test (or scripts/test.sh) first" >&2; exit 1; }

test:
	$(NEEDS_VENV)
	$(MAKE) samtools $(UNIT_PROGS) fuzz/replay_record fuzz/replay_input
	$(PYTHON) test/run_tests.py

bench:
	$(NEEDS_VENV)
	$(MAKE) samtools
	$(PYTHON) bench/run_bench.py

# Sanitizer build in its own directory, so it never mixes with the release objects.
ASAN_DIR   = build/asan
ASAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

$(ASAN_DIR)/%.o: %.c | $(HTS_LIB_FILE)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -pthread $(ASAN_FLAGS) $(CPPFLAGS) -MMD -MP -c -o $@ $<

# UBSan's vptr check is off for the C++ file alone: its wrappers derive
# from RocksDB's header-defined FS*Wrapper classes, whose vtables librocksdb
# carries copies of, so a wrapper destroyed inside the library (a failed
# DB::Open unwinding its column families) reads as "invalid vptr".  ASan
# still checks that file; on that path it finds no error.
$(ASAN_DIR)/%.o: %.cc | $(HTS_LIB_FILE)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -Wall -Wextra -pthread $(ASAN_FLAGS) -fno-sanitize=vptr $(CPPFLAGS) -MMD -MP -c -o $@ $<

# A header changed rebuilds the sanitizer objects that include it, as it
# does the release objects: a stale object laid out a struct the old way.
-include $(wildcard $(ASAN_DIR)/*.d $(ASAN_DIR)/*/*.d)

$(ASAN_DIR)/$(ENGINE_LIB): $(addprefix $(ASAN_DIR)/,$(LIB_OBJS))
	rm -f $@
	$(AR) rcs $@ $^

# The bundled htslib again, with frame pointers, for the sanitizer build
# alone.  ASan's fast unwinder follows frame pointers: through the release
# htslib it stops at the first htslib frame, and test/lsan.supp names htslib
# functions that are not always that frame.  With them, every malloc's stack
# is whole, and test-asan need not pay for the slow (DWARF) unwinder.
ifeq ($(HTSLIB),bundled)
  ASAN_HTS_LIB := $(ASAN_DIR)/htslib/libhts.a
  ASAN_LDLIBS  := $(patsubst $(HTS_LIB_FILE),$(ASAN_HTS_LIB),$(LDLIBS))
  ASAN_UNWIND  := fast_unwind_on_malloc=1
else
  ASAN_HTS_LIB :=
  ASAN_LDLIBS  := $(LDLIBS)
  ASAN_UNWIND  := fast_unwind_on_malloc=0
endif

$(ASAN_DIR)/htslib/libhts.a: $(HTS_LIB_FILE)
	rm -rf $(ASAN_DIR)/htslib && mkdir -p $(ASAN_DIR)
	cp -R htslib $(ASAN_DIR)/htslib
	$(MAKE) -s -C $(ASAN_DIR)/htslib clean
	$(MAKE) -s -C $(ASAN_DIR)/htslib lib-static \
	  CFLAGS="$$(sed -n 's/^CFLAGS *= *//p' htslib/config.mk) -fno-omit-frame-pointer"

$(ASAN_DIR)/samtools: $(ASAN_DIR)/bamtk.o $(ASAN_DIR)/$(ENGINE_LIB) $(ASAN_HTS_LIB)
	$(CXX) $(ASAN_FLAGS) -pthread -o $@ $(ASAN_DIR)/bamtk.o $(ASAN_DIR)/$(ENGINE_LIB) $(ASAN_LDLIBS)

asan: $(ASAN_DIR)/samtools

# The suite under AddressSanitizer and UBSan, less the tests marked
# release_only (test/harness.py): the same paths at other -@, ulimit -n or
# budgets, which ASan's time would double CI's for no new path.  Whole
# malloc stacks let test/lsan.supp name the htslib-internal leaks precisely:
# the fast unwinder gives them where htslib has frame pointers (above), the
# slow one where it is the system's.
test-asan:
	$(NEEDS_VENV)
	$(MAKE) $(ASAN_DIR)/samtools $(UNIT_PROGS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:$(ASAN_UNWIND) \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(PYTHON) test/run_tests.py --light --binary $(ASAN_DIR)/samtools

# A subset under valgrind (memcheck is ~30x slower than ASan): every order,
# spilling, CRAM, pipes, bad input and accounting, samtools' own template
# and -I cases, a refused template after spilling, the readout merged in 4
# key ranges (two sorts), and resumed states (one taken back with no run but
# its journal appended to; directories that are not states): tests that
# kill at a later phase wait too long under memcheck.  A record damaged
# mid-input at -@ 16 takes the records parsed on the pool through a job's
# failure.  Any memcheck error or
# definite leak makes rocksort exit 99, which fails the test.
VALGRIND_TESTS = 'mixed_*' 'ties_stable_*' 'tricky_names_spilled_*' 'bulk_spilled_*' \
                 'input_cram_*' 'output_cram_coord' 'stdin_*' 'bad_input_*' 'verify_*' \
                 'error_*' 'output_sam_*' 'upstream_sort_template_coordinate_*' \
                 'upstream_sort_minimiser_indexed_t2' 'template_error_cb_integer_spilled' \
                 'readout_verify_in_memory_k4' \
                 'readout_verify_spilled_k4' 'resume_kill_in_readout_file' \
                 'resume_fresh_run_succeeds_and_removes_dir' 'resume_state_without_runs_big_header' \
                 'resume_refuses_foreign_*' 'pool_parse_damaged_l_seq_huge'
# Reports go to build/valgrind/, not stderr, where tests check every line.
VALGRIND = valgrind -q --vgdb=no --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
           --show-leak-kinds=definite --log-file=$(CURDIR)/build/valgrind/%p.log
test-valgrind:
	$(NEEDS_VENV)
	$(MAKE) samtools
	rm -rf build/valgrind && mkdir -p build/valgrind
	ROCKSORT_CMD="$(VALGRIND) $(CURDIR)/samtools rocksort" \
	  $(PYTHON) test/run_tests.py $(addprefix -k ,$(VALGRIND_TESTS)) || \
	  { find build/valgrind -name '*.log' -size +0 | xargs -r grep -v 'unimplemented fcntl'; exit 1; }

# Fuzzing (clang + libFuzzer): `make fuzz-run FUZZ_SECONDS=900` runs each
# target that long; findings land in fuzz/findings/.  The seeds and every
# reproducer kept in fuzz/regressions/ are replayed by `make test` through
# fuzz/replay.c, which needs no clang.
FUZZ_CC      = clang
FUZZ_CXX     = clang++
FUZZ_FLAGS   = -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS = 900
FUZZ_OBJ_DIR = build/fuzz

# The engine once more, instrumented for libFuzzer, as a library of its own.
# C++ is compiled by the C++ driver; the targets, linked by the C driver,
# ask for the C++ runtime (and UBSan's part for C++) by name.
$(FUZZ_OBJ_DIR)/%.o: %.c | $(HTS_LIB_FILE)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(CPPFLAGS) -c -o $@ $<

$(FUZZ_OBJ_DIR)/%.o: %.cc | $(HTS_LIB_FILE)
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) -std=c++17 $(FUZZ_FLAGS) -fno-sanitize=vptr -fsanitize=fuzzer-no-link $(CPPFLAGS) -c -o $@ $<

$(FUZZ_OBJ_DIR)/$(ENGINE_LIB): $(addprefix $(FUZZ_OBJ_DIR)/,$(LIB_OBJS))
	rm -f $@
	$(AR) rcs $@ $^

fuzz/fuzz_record: fuzz/fuzz_record.c $(FUZZ_OBJ_DIR)/$(ENGINE_LIB)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -fsanitize-link-c++-runtime $(CPPFLAGS) -Itest \
	    -o $@ $^ $(LDLIBS) $(CXX_RUNTIME)

fuzz/fuzz_input: fuzz/fuzz_input.c $(FUZZ_OBJ_DIR)/$(ENGINE_LIB)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -fsanitize-link-c++-runtime $(CPPFLAGS) \
	    -o $@ $^ $(LDLIBS) $(CXX_RUNTIME)

# The same targets without clang: make test replays the corpus through them.
fuzz/replay_%: fuzz/replay.c fuzz/fuzz_%.c $(ENGINE_LIB) $(HTS_LIB_FILE)
	$(CC) $(CFLAGS) $(CPPFLAGS) -Itest -o $@ fuzz/replay.c fuzz/fuzz_$*.c $(ENGINE_LIB) \
	    $(LDLIBS) $(CXX_RUNTIME)

fuzz: fuzz/fuzz_record fuzz/fuzz_input

fuzz-run: fuzz
	mkdir -p fuzz/work/record fuzz/work/input fuzz/findings
	./fuzz/fuzz_record -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=fuzz/findings/record- \
	    fuzz/work/record fuzz/corpus/record
	./fuzz/fuzz_input -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=4096 \
	    -artifact_prefix=fuzz/findings/input- fuzz/work/input fuzz/corpus/input

# An existing samtools at PREFIX/bin that is not this program is never
# replaced (scripts/install.sh says why and what to do instead);
# REPLACE_SAMTOOLS=yes replaces it anyway.
install: samtools
	@bash scripts/install.sh samtools "$(DESTDIR)$(PREFIX)/bin/samtools" "$(REPLACE_SAMTOOLS)"
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 644 doc/samtools-rocksort.1 $(DESTDIR)$(MANDIR)/man1/samtools-rocksort.1

clean:
	rm -f samtools $(ENGINE_LIB) $(OBJS) $(OBJS:.o=.d) $(UNIT_PROGS)
	rm -f fuzz/fuzz_record fuzz/fuzz_input fuzz/replay_record fuzz/replay_input
	rm -rf build
