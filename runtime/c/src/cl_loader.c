/* cl_loader.c: opens the OpenCL library at run time and resolves the entry points that
 * adreno_rt calls (cl_api.h) into the table `adreno_cl`.
 *
 * This is what every mobile OpenCL runtime does (the Android NDK has no libOpenCL.so to
 * link, and the device's lives in /vendor), and it is why building runtime/c needs
 * neither OpenCL headers nor an OpenCL library: a C compiler and CMake only.
 *
 * Which library (the first rule that applies; the first library that loads and has every
 * entry point is used):
 *   1. adreno_options.opencl_library (adreno-run --opencl-library PATH): that one only;
 *   2. $ADRENO_RT_OPENCL_LIBRARY: that one only;
 *   3. libOpenCL.so.1, libOpenCL.so (the ICD loader, through the dynamic linker's search:
 *      LD_LIBRARY_PATH, the ld.so cache); on Android then the vendor's and the system's
 *      libOpenCL.so in /vendor/lib64, /system/vendor/lib64, /system/lib64 (/vendor/lib,
 *      /system/lib in 32-bit processes); on Apple the OpenCL framework.
 *
 * Once per process. The library is loaded by the first adreno_open that needs OpenCL and
 * stays loaded until the process exits (never dlclose'd: ICDs start threads and register
 * exit handlers, and unloading one under them is a known source of crashes at exit). The
 * table and the handle are static data, so the memory checkers see nothing to free. One
 * library per process rather than per model, because OpenCL objects only make sense
 * through the loader and driver that created them (the Python binding hands over
 * pyopencl's context, device and program), and ICD loaders keep process-wide state of
 * their own: a later adreno_open that names a *different* library is refused with an
 * ADRENO_ERR_OPENCL_LIBRARY error instead of mixing two. A failed load is not
 * remembered: the next adreno_open tries again (with, perhaps, another path).
 *
 * POSIX (dlopen, pthread): Linux, Android, macOS. */
#define _GNU_SOURCE /* glibc: dladdr, RTLD_NOLOAD (bionic and macOS have them anyway) */
#include "cl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adreno_rt.h"

adreno_cl_table adreno_cl;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handle;           /* the loaded library, kept for the life of the process */
static char loaded_path[4096]; /* as it was given to dlopen */
static char loaded_file[4096]; /* the file it is (loaded_path, or the file a bare name found) */

#define ENV_VAR "ADRENO_RT_OPENCL_LIBRARY"

static const char *const default_paths[] = {
#if defined(__APPLE__)
    "/System/Library/Frameworks/OpenCL.framework/OpenCL",
#else
    "libOpenCL.so.1",
    "libOpenCL.so",
#if defined(__ANDROID__) && defined(__LP64__)
    "/vendor/lib64/libOpenCL.so",
    "/system/vendor/lib64/libOpenCL.so",
    "/system/lib64/libOpenCL.so",
#elif defined(__ANDROID__)
    "/vendor/lib/libOpenCL.so",
    "/system/vendor/lib/libOpenCL.so",
    "/system/lib/libOpenCL.so",
#endif
#endif
};

typedef struct {
    char *buf;
    size_t size, used;
} text;

static void add(text *t, const char *fmt, ...) {
    if (t->used + 1 >= t->size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->used, t->size - t->used, fmt, ap);
    va_end(ap);
    if (n > 0) t->used = t->used + (size_t)n < t->size ? t->used + (size_t)n : t->size - 1;
}

/* The file that `path` (as given to dlopen) is: `path` itself, or for a bare name the
 * file the dynamic linker found (the one holding `table`'s first entry point). */
static void file_of(const char *path, const adreno_cl_table *table, char *out, size_t size) {
    snprintf(out, size, "%s", path);
    if (!strchr(path, '/')) {
        Dl_info info;
        void *sym;
        memcpy(&sym, &table->GetPlatformIDs, sizeof sym);
        if (dladdr(sym, &info) && info.dli_fname && info.dli_fname[0]) snprintf(out, size, "%s", info.dli_fname);
    }
}

/* The ICD loader that pyopencl's wheels bundle (pyopencl/.libs/libOpenCL-<hash>.so.*) is
 * an ocl-icd patched to also read $PYOPENCL_HOME/.libs, which copies getenv("PYOPENCL_HOME")
 * unchecked: in a process without that variable its first call crashes. Importing
 * pyopencl sets it (for Python and its children); refuse the loader here, with what to
 * set, rather than crash in it. */
static int pyopencl_loader_without_home(const char *file, text *why) {
    if (getenv("PYOPENCL_HOME")) return 0;
    char *real = realpath(file, NULL);
    const char *f = real ? real : file, *base = strrchr(f, '/');
    const char *libs = strstr(f, "/pyopencl/.libs/");
    int hit = base && libs && libs + strlen("/pyopencl/.libs") == base && !strncmp(base + 1, "libOpenCL", 9);
    if (hit)
        add(why, "%s (pyopencl's ICD loader: it crashes unless PYOPENCL_HOME is set; export PYOPENCL_HOME=%.*s)",
            file, (int)(libs - f + strlen("/pyopencl")), f);
    free(real);
    return hit;
}

/* dlopen `path`, resolve every entry point into `table` and put the file it is into
 * `file`. On failure, the reason (no library there, which entry point it lacks, or
 * pyopencl's loader without PYOPENCL_HOME) is appended to `why`. */
static void *open_library(const char *path, adreno_cl_table *table, char *file, size_t file_size, text *why) {
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        size_t n = strlen(path);
        if (!e) e = "dlopen failed";
        if (strncmp(e, path, n) == 0 && strncmp(e + n, ": ", 2) == 0) e += n + 2; /* glibc repeats the path */
        add(why, "%s (%s)", path, e);
        return NULL;
    }
    const char *first_missing = NULL;
    int missing = 0, total = 0;
    /* POSIX guarantees that a dlsym result converts to a function pointer; memcpy says so
     * without a cast ISO C frowns on. */
#define RESOLVE(ret, name, params)                                    \
    {                                                                 \
        void *sym = dlsym(h, "cl" #name);                             \
        total++;                                                      \
        if (sym) {                                                    \
            memcpy(&table->name, &sym, sizeof sym);                   \
        } else if (missing++ == 0) {                                  \
            first_missing = "cl" #name;                               \
        }                                                             \
    }
    ADRENO_CL_FUNCTIONS(RESOLVE)
#undef RESOLVE
    if (missing) {
        if (missing == 1)
            add(why, "%s (it has no %s: not an OpenCL 1.2 library)", path, first_missing);
        else
            add(why, "%s (it has no %s, nor %d more of the %d OpenCL entry points the runtime uses: not an OpenCL "
                     "library)",
                path, first_missing, missing - 1, total);
        dlclose(h); /* never called into: safe to unload */
        return NULL;
    }
    file_of(path, table, file, file_size);
    if (pyopencl_loader_without_home(file, why)) {
        dlclose(h);
        return NULL;
    }
    return h;
}

static void remember(void *h, const char *path, const char *file) {
    handle = h;
    snprintf(loaded_path, sizeof loaded_path, "%s", path);
    snprintf(loaded_file, sizeof loaded_file, "%s", file);
}

/* Whether `path` names the library already loaded (the same string, the same file, or,
 * where the dynamic linker can say so, the same loaded object). */
static int is_loaded(const char *path) {
    if (!strcmp(path, loaded_path) || !strcmp(path, loaded_file)) return 1;
    int same = 0;
    char *a = realpath(path, NULL), *b = realpath(loaded_file, NULL);
    if (a && b) same = !strcmp(a, b);
    free(a);
    free(b);
#ifdef RTLD_NOLOAD
    if (!same) {
        void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (h) {
            same = h == handle;
            dlclose(h);
        }
    }
#endif
    return same;
}

static const char *const remedy =
    "install an OpenCL driver with the OpenCL ICD loader (Debian/Ubuntu: ocl-icd-libopencl1 and a driver such as "
    "pocl-opencl-icd, mesa-opencl-icd or the GPU vendor's), or name the OpenCL library to use: "
    "ADRENO_RT_OPENCL_LIBRARY=/path/to/libOpenCL.so (adreno-run --opencl-library PATH, "
    "adreno_options.opencl_library); where pip's pyopencl is the only OpenCL, `adreno-mlir build-native` prints "
    "the loader it bundles and what to set";

int adreno_cl_load(const char *explicit_path, char *error, size_t error_size) {
    char scratch[1];
    text why = {error && error_size ? error : scratch, error && error_size ? error_size : sizeof scratch, 0};
    why.buf[0] = '\0';
    int status = -1;
    if (explicit_path && !explicit_path[0]) explicit_path = NULL;
    pthread_mutex_lock(&lock);
    if (handle) {
        if (!explicit_path || is_loaded(explicit_path)) {
            status = 0;
        } else {
            add(&why,
                "adreno_options.opencl_library (adreno-run --opencl-library) names the OpenCL library %s, but this "
                "process already uses %s: the runtime loads one OpenCL library per process (OpenCL objects belong "
                "to the library that made them); give the same path, or none",
                explicit_path, loaded_file);
        }
        pthread_mutex_unlock(&lock);
        return status;
    }
    adreno_cl_table table;
    memset(&table, 0, sizeof table);
    char file[sizeof loaded_file];
    const char *env = getenv(ENV_VAR), *chosen = explicit_path ? explicit_path : env;
    void *h = NULL;
    if (explicit_path) {
        add(&why, "cannot load the OpenCL library that adreno_options.opencl_library (adreno-run --opencl-library) "
                  "names: ");
        if (!(h = open_library(explicit_path, &table, file, sizeof file, &why)))
            add(&why, "; give the path of an OpenCL library (an ICD loader such as libOpenCL.so.1, or a vendor's "
                      "libOpenCL.so), or none to search for one");
    } else if (env && env[0]) {
        add(&why, "cannot load the OpenCL library that " ENV_VAR " names: ");
        if (!(h = open_library(env, &table, file, sizeof file, &why)))
            add(&why, "; point " ENV_VAR " at an OpenCL library (an ICD loader such as libOpenCL.so.1, or a "
                      "vendor's libOpenCL.so), or unset it to search for one");
    } else {
        add(&why, "cannot find an OpenCL library: tried ");
        for (size_t i = 0; i < sizeof default_paths / sizeof *default_paths && !h; i++) {
            if (i) add(&why, "; ");
            h = open_library(default_paths[i], &table, file, sizeof file, &why);
            chosen = default_paths[i];
        }
        if (!h) add(&why, "; %s", remedy);
    }
    if (h) {
        adreno_cl = table;
        remember(h, chosen, file);
        why.buf[0] = '\0';
        status = 0;
    }
    pthread_mutex_unlock(&lock);
    return status;
}

const char *adreno_opencl_library(void) {
    pthread_mutex_lock(&lock);
    const char *path = handle ? loaded_file : "";
    pthread_mutex_unlock(&lock);
    return path;
}
