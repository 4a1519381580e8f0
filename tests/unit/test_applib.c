/*
 * test_applib.c -- the shared libraries an application's executor needs
 * (executor/applib.c, engine/appbin.c): the names a worker keeps, the
 * link from a cached binary to its library directory, the dynamic
 * loader's failure read from an executor's stderr, and a statically linked
 * program having no library to send.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "appbin.h"
#include "applib.h"
#include "ember.h"
#include "fsutil.h"

TEST(applib_library_names) {
    CHECK(appbin_libname_ok("libember.so.0", 13));
    CHECK(appbin_libname_ok("libstdc++.so.6", 14));
    CHECK(appbin_libname_ok("lib_a-1.2.so", 12));
    CHECK(!appbin_libname_ok("", 0));
    CHECK(!appbin_libname_ok(".", 1));
    CHECK(!appbin_libname_ok("..", 2));
    CHECK(!appbin_libname_ok(".hidden.so", 10));
    CHECK(!appbin_libname_ok("../x.so", 7));
    CHECK(!appbin_libname_ok("a/b.so", 6));
    CHECK(!appbin_libname_ok("a\0b", 3));
    CHECK(!appbin_libname_ok("a b.so", 6));
    char longname[300];
    memset(longname, 'a', sizeof longname);
    CHECK(appbin_libname_ok(longname, 255));
    CHECK(!appbin_libname_ok(longname, 256));
}

/* The tests link libember's objects into their program: nothing to send
 * but the binary. */
TEST(applib_static_program_has_no_library) {
    char file[64] = "unchanged", name[64] = "unchanged";
    CHECK_EQ_I64(appbin_library(file, sizeof file, name, sizeof name), 0);
    CHECK(!strcmp(file, "unchanged") && !strcmp(name, "unchanged"));
}

TEST(applib_binary_links_its_library_directory) {
    char bin[600], libdir[700], path[800], dir[1200];
    snprintf(bin, sizeof bin, "%s/applib-bin", test_tmpdir());
    CHECK_OK(mkdir(bin, 0700));
    snprintf(path, sizeof path, "%s/0123abcd", bin);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fclose(f);
    /* No link: the binary needs no library. */
    CHECK_EQ_I64(applib_dir(path, dir, sizeof dir), 0);
    /* A link to a directory that is not there: fetch again. */
    CHECK_OK(applib_link(path, "feed"));
    CHECK_EQ_I64(applib_dir(path, dir, sizeof dir), -1);
    snprintf(libdir, sizeof libdir, "%s/feed", bin);
    CHECK_OK(mkdir(libdir, 0700));
    CHECK_EQ_I64(applib_dir(path, dir, sizeof dir), 1);
    CHECK(!strcmp(dir, libdir));
    /* Replaced atomically; a directory that does not fit is refused. */
    CHECK_OK(applib_link(path, "beef"));
    CHECK_EQ_I64(applib_dir(path, dir, sizeof dir), -1);
    snprintf(libdir, sizeof libdir, "%s/beef", bin);
    CHECK_OK(mkdir(libdir, 0700));
    CHECK_EQ_I64(applib_dir(path, dir, sizeof dir), 1);
    CHECK(!strcmp(dir, libdir));
    CHECK_EQ_I64(applib_dir(path, dir, 8), -1);
    /* A link naming a path, not a name beside the binary: refused. */
    char link[900];
    snprintf(link, sizeof link, "%s.lib", path);
    CHECK_OK(unlink(link));
    CHECK_OK(symlink("/tmp", link));
    CHECK_EQ_I64(applib_dir(path, dir, sizeof dir), -1);
    CHECK_EQ_I64(applib_link("/nonexistent-dir/x", "beef"), EM_EIO);
    CHECK_STR_CONTAINS(em_errmsg(), "/nonexistent-dir/x.lib");
    rm_tree(bin);
}

TEST(applib_reads_the_loaders_failure) {
    char lib[64], why[128];
    const char *tail = "some output of an earlier run\n"
                       "/w/bin/ab12: error while loading shared libraries: libneedlib_extra.so: cannot open shared "
                       "object file: No such file or directory\n";
    CHECK_EQ_I64(applib_loader_error(127, 0, tail, lib, sizeof lib, why, sizeof why), 1);
    CHECK(!strcmp(lib, "libneedlib_extra.so"));
    CHECK(!strcmp(why, "cannot open shared object file: No such file or directory"));
    /* Another exit code, a signal, another text: not the loader's. */
    CHECK_EQ_I64(applib_loader_error(1, 0, tail, lib, sizeof lib, why, sizeof why), 0);
    CHECK_EQ_I64(applib_loader_error(127, 9, tail, lib, sizeof lib, why, sizeof why), 0);
    CHECK_EQ_I64(applib_loader_error(127, 0, "sh: x: not found\n", lib, sizeof lib, why, sizeof why), 0);
    CHECK_EQ_I64(applib_loader_error(127, 0, "error while loading shared libraries: libx.so", lib, sizeof lib, why,
                                     sizeof why),
                 0);
    CHECK_EQ_I64(applib_loader_error(127, 0, "error while loading shared libraries: : y", lib, sizeof lib, why,
                                     sizeof why),
                 0);
    /* The last such line counts; names and reasons are cut to fit. */
    const char *two = "p: error while loading shared libraries: liba.so: one\n"
                      "p: error while loading shared libraries: libbbbbbbbbbbbbbbbb.so.7: wrong ELF class: ELFCLASS32";
    char small[8];
    CHECK_EQ_I64(applib_loader_error(127, 0, two, small, sizeof small, why, sizeof why), 1);
    CHECK(!strcmp(small, "libbbbb"));
    CHECK(!strcmp(why, "wrong ELF class: ELFCLASS32"));
}
