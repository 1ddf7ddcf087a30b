# vprof — top-level build.
#
#   make            build build/libvprof.so, build/vprof, build/libinterp.a,
#                   build/libvprof-heap.so, build/modules/*.so
#   make check      install the test dependencies (scripts/deps.sh test),
#                   run every test (tests/run), print "N passed, N failed"
#   make demo       install the build dependencies only (scripts/deps.sh
#                   build), build, profile the bundled demo, print its report
#   make demo-values  the worked example of value profiling: profile, answer,
#                   speedup (build dependencies only)
#   make bench      install the test and benchmark dependencies, run the
#                   quick sampling-overhead benchmark (bench/sampling.sh
#                   --quick; the others in bench/ by hand)
#   make install PREFIX=/usr/local
#
# Sources are picked up by folder (see docs/architecture.md, Layout):
# upcall/ preload/ spool/ interp/ go into libvprof.so; reports/ + merge/ +
# spool/ + interp/ make the vprof command; heap/ is libvprof-heap.so (the
# allocation interposers --cachesim preloads); interp/ is also
# build/libinterp.a (tests). tests/layout.sh checks that libvprof.so links
# nothing of merge/.
# The pprof encoder is generated at build time from reports/proto/ by
# protoc-c (Debian's protobuf-c-compiler) into build/gen/.

CC      ?= gcc
PREFIX  ?= /usr/local
B       := build
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wno-unused-parameter
CPPFLAGS += -D_GNU_SOURCE -Iinclude -I. -I/usr/include/x86_64-linux-gnu -I$(B)/gen
# -ffunction-sections: each function its own input section, so that the
# link can place the handler's (preload/hot-path.txt) together.
PIC     := -fPIC -fvisibility=hidden -ftls-model=initial-exec -ffunction-sections

UPCALL_SRC  := $(wildcard upcall/*.c)
PRELOAD_SRC := $(wildcard preload/*.c) $(wildcard preload/*.S)
SPOOL_SRC   := $(wildcard spool/*.c)
MERGE_SRC   := $(wildcard merge/*.c)
INTERP_SRC  := $(wildcard interp/*.c)
REPORT_SRC  := $(wildcard reports/*.c)
# Customization modules shipped with vprof (docs/modules.md): one .so each,
# built against the public header only, as a user's module would be.
MODULE_SRC  := $(wildcard modules/*.c)
MODULES     := $(patsubst modules/%.c,$(B)/modules/%.so,$(MODULE_SRC))

LIB_OBJ    := $(patsubst %.S,$(B)/pic/%.o,$(patsubst %.c,$(B)/pic/%.o,$(UPCALL_SRC) $(PRELOAD_SRC) $(SPOOL_SRC)))
INTERP_OBJ := $(patsubst %.c,$(B)/pic/%.o,$(INTERP_SRC))
PROTO_OBJ  := $(B)/obj/gen/profile.pb-c.o
CMD_OBJ    := $(patsubst %.c,$(B)/obj/%.o,$(REPORT_SRC) $(MERGE_SRC) $(SPOOL_SRC)) $(PROTO_OBJ)
# vprof html's script and style (reports/html/), compiled in by
# scripts/embed.sh so the command reads no file at run time.
HTML_ASSETS := reports/html/report.js reports/html/report.css
HTML_OBJ   := $(B)/obj/gen/html_assets.o
CMD_OBJ    += $(HTML_OBJ)

LIB_LIBS   := -lxxhash -ldl -lpthread -lrt
CMD_LIBS   := -lelf -ldw -lxxhash -lZydis -lprotobuf-c -lz -lpthread -lm
INTERP_LIBS := -lZydis

.PHONY: all deps deps-test check bench demo demo-values install clean tests reliability proto fuzz
all: $(B)/libvprof.so $(B)/vprof $(B)/libinterp.a $(B)/libvprof-heap.so $(MODULES)

# Build and run dependencies (make, make demo); deps-test adds what the
# tests and benchmarks run (make check, make bench, make reliability,
# .ci/run).
deps:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

# The library's objects depend on the Makefile too: its flags place their
# code (-ffunction-sections, hot-path.ld), which an old object would miss.
$(B)/pic/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PIC) -MMD -MP -c $< -o $@

$(B)/pic/%.o: %.S Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -fPIC -c $< -o $@

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

# Generated code: its own warnings are not ours to fix.
$(B)/gen/profile.pb-c.c: reports/proto/profile.proto
	@mkdir -p $(dir $@)
	protoc-c --proto_path=reports/proto --c_out=$(B)/gen $<
$(B)/gen/profile.pb-c.h: $(B)/gen/profile.pb-c.c
$(PROTO_OBJ): $(B)/gen/profile.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(B)/obj/reports/export_pprof.o: $(B)/gen/profile.pb-c.h
proto: $(B)/gen/profile.pb-c.c
$(B)/gen/html_assets.c: $(HTML_ASSETS) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $@ $(HTML_ASSETS)
$(HTML_OBJ): $(B)/gen/html_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(B)/libinterp.a: $(INTERP_OBJ)
	@mkdir -p $(B)
	rm -f $@ && ar rcs $@ $^

# interp/optab.c references every family directly, so the archive
# needs no --whole-archive: what links libinterp.a gets all of it.
INTERP_LINK := $(B)/libinterp.a

# The interpreter runs in the handler for co-simulation (VPROF_VERIFY).
# Linked aside and renamed: a program or test running during a rebuild
# sees the old file or the new one, never half of one.
# The functions a sample runs (preload/hot-path.txt, written by
# bench/hot_path.sh) go first, together, in an output section of their
# own, .text.vprof_hot: a sample's code then spans 18 pages, not 42.
# The script is inserted into ld's default one (INSERT BEFORE .text).
$(B)/libvprof.so: $(LIB_OBJ) $(B)/libinterp.a preload/exports.map $(B)/gen/hot-path.ld
	$(CC) -shared -o $@.tmp $(LIB_OBJ) $(INTERP_LINK) \
	    -Wl,-z,now -Wl,--version-script=preload/exports.map -Wl,-T,$(B)/gen/hot-path.ld \
	    $(LIB_LIBS) $(INTERP_LIBS)
	mv -f $@.tmp $@

$(B)/gen/hot-path.ld: preload/hot-path.txt
	@mkdir -p $(dir $@)
	{ echo 'SECTIONS { .text.vprof_hot : {'; \
	  sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)$$/    *(.text.\1 .text.\1.*)/p' $<; \
	  echo '} } INSERT BEFORE .text;'; } >$@.tmp
	mv -f $@.tmp $@

# Only the interposers: what they report goes to libvprof.so by name.
$(B)/libvprof-heap.so: $(wildcard heap/*.c)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PIC) -shared -o $@.tmp $(wildcard heap/*.c) -Wl,-z,now -ldl
	mv -f $@.tmp $@

$(B)/modules/%.so: modules/%.c include/vprof-module.h
	@mkdir -p $(dir $@)
	$(CC) -Iinclude $(CFLAGS) $(WARN) -fPIC -fvisibility=hidden -shared -o $@.tmp $<
	mv -f $@.tmp $@

$(B)/vprof: $(CMD_OBJ) $(B)/libinterp.a
	$(CC) -o $@.tmp $(CMD_OBJ) $(INTERP_LINK) $(CMD_LIBS)
	mv -f $@.tmp $@

# Unit tests: tests/unit/NAME.c -> build/tests/NAME, linked with the
# interpreter, spool/, merge/ and the report library (everything but the
# main()).
TEST_SRC := $(wildcard tests/unit/*.c)
TEST_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(TEST_SRC))
TEST_LINK := $(filter-out $(B)/obj/reports/vprof.o,$(CMD_OBJ)) $(B)/libinterp.a
tests: all $(TEST_BIN)

$(B)/tests/%: tests/unit/%.c $(TEST_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -o $@ $< $(filter-out $(B)/libinterp.a,$(TEST_LINK)) $(INTERP_LINK) $(CMD_LIBS) -lpthread -lm

# libFuzzer targets for the file readers (fuzz/), with Debian's clang.
FUZZ_CC    ?= clang
# -fno-sanitize=alignment: the readers accept sections at any offset and read
# records unaligned (UB, harmless on x86-64; found by these targets, seeds
# fuzz/corpus/*/misaligned-*); drop it once merge/spool_read.c and
# merge/profile.c require 8-byte-aligned section offsets.
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	      -fno-sanitize=alignment
FUZZ_SRC   := spool/writer.c spool/owner.c spool/stack_table.c spool/hotlist.c spool/dir.c \
	      merge/spool_read.c merge/profile.c merge/jit.c merge/stacks.c merge/code.c
FUZZ_BIN   := $(B)/fuzz/spool_fuzz $(B)/fuzz/profile_fuzz $(B)/fuzz/perfmap_fuzz \
	      $(B)/fuzz/elf_fuzz $(B)/fuzz/stacks_fuzz $(B)/fuzz/mkseed
# The symbolizer's ELF reading (reports/sym_*.c), for elf_fuzz.
FUZZ_SYM   := reports/symbolize.c reports/sym_elf.c reports/sym_table.c reports/sym_debug.c \
	      reports/sym_lines.c reports/sym_demangle.c
fuzz: $(FUZZ_BIN)
$(B)/fuzz/%_fuzz: fuzz/%_fuzz.c fuzz/fuzz_file.h $(FUZZ_SRC) $(wildcard merge/*.h spool/*.h) Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SRC) -lxxhash
$(B)/fuzz/elf_fuzz: fuzz/elf_fuzz.c fuzz/fuzz_file.h $(FUZZ_SYM) $(wildcard reports/sym*.h) Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SYM) -lelf -ldw -ldl
$(B)/fuzz/mkseed: fuzz/mkseed.c $(FUZZ_SRC) $(wildcard merge/*.h spool/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O1 -g -o $@ $< $(FUZZ_SRC) -lxxhash

# The dependencies are installed before anything is compiled (a sub-make,
# so that make -j2 does not build beside apt-get).
check: deps-test
	@$(MAKE) --no-print-directory all
	@tests/run

bench: deps-test
	@$(MAKE) --no-print-directory all
	@bench/sampling.sh --quick

# Longer reliability runs, by hand (the suite runs each briefly).
reliability: deps-test
	@$(MAKE) --no-print-directory all
	@VPROF_STRESS_BUILDS=20 MERGE_KILLS=100 CRASH_KILLS=100 FUZZ_SECONDS=600 \
	    tests/run make_stress merge_kill crash fuzz
	@scripts/cpython_full.sh
	@scripts/continuous_long.sh

# The demo needs the command and the library, not the modules or tests;
# built on every CPU unless make was given -j.
demo: deps
	@$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc)) $(B)/vprof $(B)/libvprof.so
	@scripts/demo.sh

# The worked example of value profiling (docs/worked-example.md).
demo-values: deps
	@$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc)) $(B)/vprof $(B)/libvprof.so
	@examples/specialize/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/vprof $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(B)/vprof $(DESTDIR)$(PREFIX)/bin/vprof
	install -m 0644 $(B)/libvprof.so $(DESTDIR)$(PREFIX)/lib/vprof/libvprof.so
	install -m 0644 $(B)/libvprof-heap.so $(DESTDIR)$(PREFIX)/lib/vprof/libvprof-heap.so
	install -m 0644 include/vprof-module.h $(DESTDIR)$(PREFIX)/include/vprof-module.h
	install -d $(DESTDIR)$(PREFIX)/lib/vprof/modules
	install -m 0644 $(MODULES) $(DESTDIR)$(PREFIX)/lib/vprof/modules/

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
