/* adreno_rt: executes an adreno-mlir artifact (docs/artifact.md) on an OpenCL device.
 *
 * The steps are the six of docs/artifact.md, "Running an artifact", in that order:
 * manifest -> files -> device -> program -> memory and kernels -> launches. Everything a
 * model owns hangs off `struct adreno_model`, and adreno_close() releases whatever is
 * there, so every error path is "record the message, return": adreno_open then closes
 * the half-built model. Nothing here exits or prints.
 *
 * The manifest is validated completely before any OpenCL call: every id in range, every
 * size consistent, every launch's work sizes legal. An artifact from a newer compiler,
 * a truncated or corrupted copy or a malformed manifest therefore fails with a message
 * naming the entry, never with a crash in this library. What the kernels themselves do
 * with the sizes and scalars the launches pass them cannot be checked here (kernels.cl is
 * code): an artifact must be trusted like any program you run.
 *
 * Format version 5 adds state (inputs that live on the device between runs: a decoder's KV
 * cache) and decoder artifacts: a prefill and a decode program sharing one weights blob and
 * their state, which adreno_decoder_open instantiates as two models on one context (the
 * second borrowing the first's weight and state buffers) and adreno_decoder_generate runs
 * the generation loop over (prefill chunks, decode steps, greedy or sampled tokens). */
#define _XOPEN_SOURCE 700 /* POSIX 2008 + XSI: stat(), realpath(), clock_gettime() */
/* The OpenCL types and constants, and the cl* entry points as calls through the table
 * that cl_loader.c fills from the OpenCL library it opens at run time (no OpenCL header
 * or library is needed to build this). */
#include "cl_api.h"

#include "adreno_rt.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "json.h"
#include "sha256.h"

#define FORMAT_NAME "adreno-mlir-artifact"
#define WEIGHT_ALIGNMENT 64
#define MAX_RANK 16
/* Sizes beyond this are refused as malformed (no device has 2^48 bytes), which also keeps
 * every product of them far from overflowing int64. */
#define MAX_BYTES ((int64_t)1 << 48)
/* Work sizes: each global entry below 2^31 (a 32-bit size_t holds it) and at most 2^40
 * work-items per launch. */
#define MAX_GLOBAL (((int64_t)1 << 31) - 1)
#define MAX_WORK_ITEMS ((int64_t)1 << 40)
#define MAX_IMAGE_SIDE ((int64_t)1 << 24)
/* An i32 input's ids lie in [-bound, bound): with bound = 2^31 every int32 is one. */
#define MAX_BOUND ((int64_t)1 << 31)
/* tensor_desc.dtype of an input kept in halves (format version 5: state only, never fed;
 * not part of the public adreno_dtype) */
#define DTYPE_F16_STATE ((adreno_dtype)2)

enum { ARG_ALLOCATION, ARG_WEIGHT, ARG_I32, ARG_F32 };

typedef struct {
    int image;
    int64_t bytes;           /* buffer */
    int64_t width, height;   /* image */
    int half;                /* image: rgba_f16 (else rgba_f32) */
} alloc_desc;

typedef struct {
    char *name;
    int64_t count, offset, bytes;
} weight_desc;

typedef struct {
    char *name;
    int rank;
    int64_t shape[MAX_RANK];
    int64_t count;
    adreno_dtype dtype;      /* F32, or I32 for an input of token ids (format version 2) */
    int64_t bound;           /* I32: the ids lie in [-bound, bound); 0 for F32 */
    int allocation;          /* -1 for a constant output */
    int64_t constant_offset; /* a constant output (format version 3): its f32 values in the weights blob */
    float *constant;         /* ... copied to host memory when the model is opened */
} tensor_desc;

typedef struct {
    int kind;
    int index;
    cl_int i32;
    cl_float f32;
} arg_desc;

typedef struct {
    char *kernel;
    char *node; /* the ONNX node the launch computes (informational), "" when the manifest has none */
    int num_args;
    arg_desc *args;
    cl_uint dims;
    size_t global[3];
    size_t local[3];
    int has_local;  /* planned local size, and the device takes it */
} launch_desc;

typedef struct {
    char *file, *device, *platform, *driver_version, *build_options;
} binary_desc;

/* An input that is state (format version 5): not fed per run, its allocation created
 * zero-filled once and updated in place by the launches (a decoder's KV cache). */
typedef struct {
    char *input, *output;
    int allocation;
    int64_t bytes;
} state_desc;

struct adreno_model {
    char error[4096];
    /* the plan */
    int num_allocs, num_weights, num_inputs, num_outputs, num_launches, num_binaries;
    alloc_desc *allocs;
    weight_desc *weights;
    tensor_desc *inputs, *outputs;
    launch_desc *launches;
    binary_desc *binaries;
    char *build_options;
    char *source_file, *weights_file;
    int64_t weights_bytes;
    int format_version;
    int has_images;
    /* state (format version 5): removed from `inputs`, which lists the fed inputs only */
    int num_states;
    state_desc *states;
    /* While instantiating the second program of a decoder: the model whose weight buffers
     * (the same blob range) and state buffers (the same input name) this one borrows. */
    const struct adreno_model *share;
    /* which inputs adreno_set_input has given since the last adreno_run_io; whether the
     * staged outputs hold the last adreno_run's results */
    unsigned char *input_set;
    int outputs_valid;
    /* OpenCL */
    cl_context context;
    cl_device_id device;
    cl_command_queue queue, profiling_queue;
    cl_program program;
    cl_mem *alloc_mem, *weight_mem;
    /* 1 where this model created the memory object (and releases it), 0 where it borrows
     * one of `share` (which outlives it: adreno_decoder_close closes the borrower first) */
    unsigned char *alloc_owned, *weight_owned;
    cl_kernel *kernels;
    /* input/output staging, per tensor (inputs first): a mapped pinned buffer
     * (pinned[i], stage_mem[i]) or plain host memory */
    unsigned char *pinned;
    int num_pinned;
    cl_mem *stage_mem;
    void **stage;         /* num_inputs + num_outputs host pointers (4-byte elements: f32 or i32) */
    char device_name[1024];
    const char *origin;
};

/* ------------------------------------------------------------------ errors */

static adreno_status fail(adreno_model *m, adreno_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->error, sizeof m->error, fmt, ap);
    va_end(ap);
    return status;
}

const char *adreno_status_name(adreno_status status) {
    switch (status) {
    case ADRENO_OK: return "ADRENO_OK";
    case ADRENO_ERR_ARGUMENT: return "ADRENO_ERR_ARGUMENT";
    case ADRENO_ERR_IO: return "ADRENO_ERR_IO";
    case ADRENO_ERR_FORMAT: return "ADRENO_ERR_FORMAT";
    case ADRENO_ERR_VERSION: return "ADRENO_ERR_VERSION";
    case ADRENO_ERR_CORRUPT: return "ADRENO_ERR_CORRUPT";
    case ADRENO_ERR_DEVICE: return "ADRENO_ERR_DEVICE";
    case ADRENO_ERR_BUILD: return "ADRENO_ERR_BUILD";
    case ADRENO_ERR_OPENCL: return "ADRENO_ERR_OPENCL";
    case ADRENO_ERR_MEMORY: return "ADRENO_ERR_MEMORY";
    case ADRENO_ERR_OPENCL_LIBRARY: return "ADRENO_ERR_OPENCL_LIBRARY";
    case ADRENO_ERR_INPUT: return "ADRENO_ERR_INPUT";
    }
    return "ADRENO_ERR_UNKNOWN";
}

static const char *cl_error_name(cl_int e) {
    switch (e) {
#define CASE(x) \
    case x: return #x;
        CASE(CL_DEVICE_NOT_FOUND) CASE(CL_DEVICE_NOT_AVAILABLE) CASE(CL_COMPILER_NOT_AVAILABLE)
        CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE) CASE(CL_OUT_OF_RESOURCES) CASE(CL_OUT_OF_HOST_MEMORY)
        CASE(CL_PROFILING_INFO_NOT_AVAILABLE) CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED) CASE(CL_BUILD_PROGRAM_FAILURE)
        CASE(CL_INVALID_VALUE) CASE(CL_INVALID_DEVICE) CASE(CL_INVALID_CONTEXT) CASE(CL_INVALID_COMMAND_QUEUE)
        CASE(CL_INVALID_MEM_OBJECT) CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) CASE(CL_INVALID_IMAGE_SIZE)
        CASE(CL_INVALID_BINARY) CASE(CL_INVALID_BUILD_OPTIONS) CASE(CL_INVALID_PROGRAM)
        CASE(CL_INVALID_PROGRAM_EXECUTABLE) CASE(CL_INVALID_KERNEL_NAME) CASE(CL_INVALID_KERNEL)
        CASE(CL_INVALID_ARG_INDEX) CASE(CL_INVALID_ARG_VALUE) CASE(CL_INVALID_ARG_SIZE)
        CASE(CL_INVALID_KERNEL_ARGS) CASE(CL_INVALID_WORK_DIMENSION) CASE(CL_INVALID_WORK_GROUP_SIZE)
        CASE(CL_INVALID_WORK_ITEM_SIZE) CASE(CL_INVALID_GLOBAL_OFFSET) CASE(CL_INVALID_EVENT_WAIT_LIST)
        CASE(CL_INVALID_OPERATION) CASE(CL_INVALID_BUFFER_SIZE) CASE(CL_INVALID_GLOBAL_WORK_SIZE)
        CASE(CL_INVALID_PLATFORM) CASE(CL_INVALID_DEVICE_TYPE) CASE(CL_INVALID_HOST_PTR)
        CASE(CL_MAP_FAILURE) CASE(CL_INVALID_EVENT)
#undef CASE
    }
    return "OpenCL error";
}

/* ------------------------------------------------------------------ small helpers */

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *out = (char *)malloc(n);
    if (out) memcpy(out, s, n);
    return out;
}

static int contains_nocase(const char *haystack, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return 1;
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return 0;
}

/* The manifest is read through these: each names the entry in its message. */
typedef struct {
    adreno_model *m;
    const char *file;  /* ".../manifest.json" or "the manifest" */
    const char *scope; /* "programs.decode." inside a decoder artifact, else NULL */
} reader;

static adreno_status bad(reader *r, const char *where, const char *fmt, ...) {
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return fail(r->m, ADRENO_ERR_FORMAT, "%s is malformed: %s%s: %s; save the artifact again with adreno-mlir",
                r->file, r->scope ? r->scope : "", where, why);
}

static adreno_status need(reader *r, const json_value *obj, const char *key, json_type type, const char *where,
                          const json_value **out) {
    const json_value *v = json_get(obj, key);
    static const char *names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    *out = v;
    if (!v) return bad(r, where, "'%s' is missing", key);
    if (v->type != type) return bad(r, where, "'%s' must be %s, not %s", key, names[type], names[v->type]);
    *out = v;
    return ADRENO_OK;
}

static adreno_status need_int(reader *r, const json_value *obj, const char *key, const char *where, int64_t lo,
                              int64_t hi, int64_t *out) {
    const json_value *v;
    adreno_status st = need(r, obj, key, JSON_NUMBER, where, &v);
    if (st) return st;
    if (!v->is_integer) {
        if (fabs(v->number) >= 9.2e18 && v->number == floor(v->number))
            return bad(r, where, "'%s' is out of range", key);
        return bad(r, where, "'%s' must be an integer", key);
    }
    if (v->integer < lo || v->integer > hi)
        return bad(r, where, "'%s' is %lld, outside [%lld, %lld]", key, (long long)v->integer, (long long)lo,
                   (long long)hi);
    *out = v->integer;
    return ADRENO_OK;
}

static adreno_status need_string(reader *r, const json_value *obj, const char *key, const char *where, char **out) {
    const json_value *v;
    adreno_status st = need(r, obj, key, JSON_STRING, where, &v);
    if (st) return st;
    *out = dup_string(v->string);
    return *out ? ADRENO_OK : fail(r->m, ADRENO_ERR_MEMORY, "out of host memory reading %s", r->file);
}

static const char *opt_string(const json_value *obj, const char *key) {
    const json_value *v = json_get(obj, key);
    return v && v->type == JSON_STRING ? v->string : "";
}

/* A file name taken from the manifest: relative, '/'-separated, no '..', so that a
 * manifest can only name files inside its own artifact. */
static int safe_name(const char *name) {
    if (!*name || name[0] == '/' || name[0] == '\\' || strchr(name, ':')) return 0;
    const char *p = name;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.')) return 0;
        if (memchr(p, '\\', n)) return 0;
        p += n;
        if (*p == '/') p++;
    }
    return 1;
}

/* ------------------------------------------------------------------ the plan */

/* The strings of a JSON array (checked to be strings) joined by single spaces. */
static char *join_strings(const json_value *arr) {
    size_t total = 1;
    for (size_t i = 0; i < arr->length; i++) total += arr->items[i].length + 1;
    char *out = (char *)malloc(total), *p = out;
    if (!out) return NULL;
    for (size_t i = 0; i < arr->length; i++) {
        if (i) *p++ = ' ';
        memcpy(p, arr->items[i].string, arr->items[i].length);
        p += arr->items[i].length;
    }
    *p = '\0';
    return out;
}

static adreno_status read_tensors(reader *r, const json_value *root, const char *key, tensor_desc **out, int *num) {
    const json_value *arr;
    adreno_status st = need(r, root, key, JSON_ARRAY, "the top level", &arr);
    if (st) return st;
    int outputs = strcmp(key, "outputs") == 0;
    if ((outputs && arr->length == 0) || arr->length > 4096)
        return bad(r, key, "a model has %s to 4096 %s", outputs ? "1" : "0", key);
    *out = (tensor_desc *)calloc(arr->length ? arr->length : 1, sizeof **out);
    if (!*out) return fail(r->m, ADRENO_ERR_MEMORY, "out of host memory");
    *num = (int)arr->length;
    for (size_t i = 0; i < arr->length; i++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%zu]", key, i);
        const json_value *t = &arr->items[i], *shape, *dtype, *layout;
        tensor_desc *d = &(*out)[i];
        if (t->type != JSON_OBJECT) return bad(r, where, "must be an object");
        if ((st = need_string(r, t, "name", where, &d->name))) return st;
        if ((st = need(r, t, "dtype", JSON_STRING, where, &dtype))) return st;
        d->dtype = ADRENO_DTYPE_F32;
        if (!outputs && strcmp(dtype->string, "i32") == 0) {
            /* token ids (format version 2): int32 in [-bound, bound) */
            if (r->m->format_version < 2)
                return bad(r, where, "i32 inputs need format version 2 (this manifest says %d)",
                           r->m->format_version);
            if (!json_get(t, "bound")) return bad(r, where, "an i32 input needs a 'bound'");
            if ((st = need_int(r, t, "bound", where, 1, MAX_BOUND, &d->bound))) return st;
            d->dtype = ADRENO_DTYPE_I32;
        } else if (!outputs && strcmp(dtype->string, "f16") == 0 && r->m->format_version >= 5) {
            /* state kept in halves (a KV cache after kv-cache-storage{element=f16}): never fed,
             * read_states checks that it is state */
            d->dtype = DTYPE_F16_STATE;
        } else if (strcmp(dtype->string, "f32") != 0) {
            /* Not malformed (format version 3 has constant outputs of any dtype): this C API
             * returns float32 arrays only. */
            return fail(r->m, ADRENO_ERR_FORMAT,
                        "%s: %s '%s' is %s; this runtime takes f32 or i32 inputs and returns f32 outputs (its C API "
                        "returns float arrays): run the model with adreno_mlir.load(...) in Python, or compile a "
                        "model whose %s are float32",
                        r->file, outputs ? "output" : "input", d->name, dtype->string, key);
        } else if (json_get(t, "bound")) {
            return bad(r, where, "'bound' belongs to i32 inputs only (this one is f32)");
        }
        layout = json_get(t, "layout");
        if (layout && (layout->type != JSON_STRING || strcmp(layout->string, "nchw") != 0))
            return bad(r, where, "layout must be \"nchw\"");
        if ((st = need(r, t, "shape", JSON_ARRAY, where, &shape))) return st;
        if (shape->length > MAX_RANK) return bad(r, where, "rank %zu is above %d", shape->length, MAX_RANK);
        d->rank = (int)shape->length;
        d->count = 1;
        for (size_t k = 0; k < shape->length; k++) {
            const json_value *dim = &shape->items[k];
            if (dim->type != JSON_NUMBER || !dim->is_integer || dim->integer < 1 || dim->integer > MAX_BYTES)
                return bad(r, where, "shape[%zu] must be a positive integer", k);
            if (dim->integer > (MAX_BYTES / 4) / d->count) return bad(r, where, "shape has too many elements");
            d->shape[k] = dim->integer;
            d->count *= dim->integer;
        }
        int64_t a;
        const json_value *constant = outputs ? json_get(t, "constant") : NULL;
        d->constant_offset = -1;
        if (constant) { /* a constant output (format version 3): its values lie in the weights blob */
            int64_t offset, bytes;
            if (r->m->format_version < 3)
                return bad(r, where, "'constant' outputs need format version 3 (this manifest says %d)",
                           r->m->format_version);
            if (json_get(t, "allocation")) return bad(r, where, "has both 'constant' and 'allocation'");
            if (constant->type != JSON_OBJECT) return bad(r, where, "'constant' must be an object");
            if ((st = need_int(r, constant, "offset", where, 0, MAX_BYTES, &offset))) return st;
            if ((st = need_int(r, constant, "bytes", where, 0, MAX_BYTES, &bytes))) return st;
            if (bytes != d->count * 4)
                return bad(r, where, "constant 'bytes' %lld is not the %lld of %lld f32 values", (long long)bytes,
                           (long long)(d->count * 4), (long long)d->count);
            if (offset % WEIGHT_ALIGNMENT)
                return bad(r, where, "constant offset %lld is not a multiple of %d", (long long)offset,
                           WEIGHT_ALIGNMENT);
            if (offset + bytes > r->m->weights_bytes)
                return bad(r, where, "constant bytes [%lld, %lld) lie beyond weights.bytes = %lld", (long long)offset,
                           (long long)(offset + bytes), (long long)r->m->weights_bytes);
            d->constant_offset = offset;
            d->allocation = -1;
            continue;
        }
        if ((st = need_int(r, t, "allocation", where, 0, r->m->num_allocs - 1, &a))) return st;
        d->allocation = (int)a;
        const alloc_desc *alloc = &r->m->allocs[a];
        if (alloc->image) return bad(r, where, "allocation %lld is an image; %s live in buffers", (long long)a, key);
        for (size_t j = 0; j < i; j++)
            if ((*out)[j].allocation == d->allocation)
                return bad(r, where, "shares allocation %lld with %s[%zu]; each has its own", (long long)a, key, j);
        int64_t need = d->count * (d->dtype == DTYPE_F16_STATE ? 2 : 4);
        if (alloc->bytes < need)
            return bad(r, where, "allocation %lld has %lld bytes, fewer than the %lld the tensor needs", (long long)a,
                       (long long)alloc->bytes, (long long)need);
    }
    return ADRENO_OK;
}

static adreno_status read_launch(reader *r, const json_value *l, size_t i, launch_desc *d) {
    char where[64];
    snprintf(where, sizeof where, "launches[%zu]", i);
    const json_value *args, *global, *local;
    adreno_status st;
    if (l->type != JSON_OBJECT) return bad(r, where, "must be an object");
    if ((st = need_string(r, l, "kernel", where, &d->kernel))) return st;
    const json_value *node = json_get(l, "node");
    if (node && node->type != JSON_STRING && node->type != JSON_NULL)
        return bad(r, where, "'node' must be a string");
    d->node = dup_string(node && node->type == JSON_STRING ? node->string : "");
    if (!d->node) return fail(r->m, ADRENO_ERR_MEMORY, "out of host memory reading %s", r->file);
    if ((st = need(r, l, "args", JSON_ARRAY, where, &args))) return st;
    if (args->length > 256) return bad(r, where, "%zu arguments (at most 256)", args->length);
    d->num_args = (int)args->length;
    if (args->length) {
        d->args = (arg_desc *)calloc(args->length, sizeof *d->args);
        if (!d->args) return fail(r->m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    for (size_t k = 0; k < args->length; k++) {
        char w[96];
        snprintf(w, sizeof w, "launches[%zu].args[%zu]", i, k);
        const json_value *a = &args->items[k], *kind, *value;
        arg_desc *ad = &d->args[k];
        if (a->type != JSON_OBJECT) return bad(r, w, "must be an object");
        if ((st = need(r, a, "kind", JSON_STRING, w, &kind))) return st;
        int64_t id;
        if (strcmp(kind->string, "allocation") == 0) {
            ad->kind = ARG_ALLOCATION;
            if ((st = need_int(r, a, "id", w, 0, r->m->num_allocs - 1, &id))) return st;
            ad->index = (int)id;
        } else if (strcmp(kind->string, "weight") == 0) {
            ad->kind = ARG_WEIGHT;
            if ((st = need_int(r, a, "id", w, 0, (int64_t)r->m->num_weights - 1, &id))) return st;
            ad->index = (int)id;
        } else if (strcmp(kind->string, "i32") == 0) {
            ad->kind = ARG_I32;
            if ((st = need_int(r, a, "value", w, INT32_MIN, INT32_MAX, &id))) return st;
            ad->i32 = (cl_int)id;
        } else if (strcmp(kind->string, "f32") == 0) {
            ad->kind = ARG_F32;
            if ((st = need(r, a, "value", JSON_NUMBER, w, &value))) return st;
            if (fabs(value->number) > FLT_MAX && fabs(value->number) != HUGE_VAL)
                return bad(r, w, "value %g is outside the float range", value->number);
            ad->f32 = (cl_float)value->number;
        } else {
            return bad(r, w, "unknown argument kind '%s' (format version 1 has allocation, weight, i32, f32)",
                       kind->string);
        }
    }
    if ((st = need(r, l, "global", JSON_ARRAY, where, &global))) return st;
    if (global->length < 1 || global->length > 3) return bad(r, where, "'global' must have 1 to 3 entries");
    d->dims = (cl_uint)global->length;
    local = json_get(l, "local");
    if (local && local->type != JSON_NULL) {
        if (local->type != JSON_ARRAY || local->length != global->length)
            return bad(r, where, "'local' must be null or have as many entries as 'global'");
        d->has_local = 1;
    }
    int64_t items = 1;
    for (size_t k = 0; k < global->length; k++) {
        const json_value *g = &global->items[k];
        if (g->type != JSON_NUMBER || !g->is_integer || g->integer < 1 || g->integer > MAX_GLOBAL)
            return bad(r, where, "global[%zu] must be an integer in [1, %lld]", k, (long long)MAX_GLOBAL);
        if (g->integer > MAX_WORK_ITEMS / items)
            return bad(r, where, "more than 2^40 work-items in one launch");
        items *= g->integer;
        d->global[k] = (size_t)g->integer;
        if (d->has_local) {
            const json_value *lv = &local->items[k];
            if (lv->type != JSON_NUMBER || !lv->is_integer || lv->integer < 1 || lv->integer > 65536)
                return bad(r, where, "local[%zu] must be a positive integer", k);
            if (g->integer % lv->integer != 0)
                return bad(r, where, "local[%zu] = %lld does not divide global[%zu] = %lld", k,
                           (long long)lv->integer, k, (long long)g->integer);
            d->local[k] = (size_t)lv->integer;
        }
    }
    return ADRENO_OK;
}

/* The manifest's format and version (sets m->format_version). */
static adreno_status read_format(reader *r, const json_value *root) {
    adreno_model *m = r->m;
    const json_value *v;
    if (root->type != JSON_OBJECT) return bad(r, "the top level", "must be an object");
    v = json_get(root, "format");
    if (!v || v->type != JSON_STRING || strcmp(v->string, FORMAT_NAME) != 0)
        return fail(m, ADRENO_ERR_VERSION, "%s is not an adreno-mlir artifact manifest (format '%s', expected '%s')",
                    r->file, v && v->type == JSON_STRING ? v->string : "missing", FORMAT_NAME);
    v = json_get(root, "format_version");
    if (!v || v->type != JSON_NUMBER || !v->is_integer || v->integer < ADRENO_FORMAT_VERSION_MIN ||
        v->integer > ADRENO_FORMAT_VERSION) {
        char found[64];
        if (v && v->type == JSON_NUMBER && v->is_integer) snprintf(found, sizeof found, "%lld", (long long)v->integer);
        else snprintf(found, sizeof found, "%s", v ? "not an integer" : "missing");
        const json_value *producer = json_get(root, "producer");
        return fail(m, ADRENO_ERR_VERSION,
                    "%s has artifact format version %s (written by adreno-mlir %s); this runtime (%s) reads format "
                    "versions %d to %d. Recompile the model with a matching adreno-mlir "
                    "(adreno-mlir compile MODEL.onnx -o X.adreno)",
                    r->file, found, *opt_string(producer, "version") ? opt_string(producer, "version") : "?",
                    ADRENO_RT_VERSION, ADRENO_FORMAT_VERSION_MIN, ADRENO_FORMAT_VERSION);
    }
    m->format_version = (int)v->integer;
    return ADRENO_OK;
}

static int find_input(const adreno_model *m, const char *name) {
    for (int i = 0; i < m->num_inputs; i++)
        if (strcmp(m->inputs[i].name, name) == 0) return i;
    return -1;
}

static int find_state(const adreno_model *m, const char *input) {
    for (int i = 0; i < m->num_states; i++)
        if (strcmp(m->states[i].input, input) == 0) return i;
    return -1;
}

/* Inputs in halves must be state: no run feeds them (this C API takes float and int32 arrays). */
static adreno_status check_f16_inputs_are_state(reader *r) {
    for (int i = 0; i < r->m->num_inputs; i++)
        if (r->m->inputs[i].dtype == DTYPE_F16_STATE && find_state(r->m, r->m->inputs[i].name) < 0)
            return bad(r, "inputs", "input '%s' is f16, which only state (a KV cache kept on the device) may be",
                       r->m->inputs[i].name);
    return ADRENO_OK;
}

/* The plan's "state" (format version 5): each entry an f32 input (or an f16 one: a KV cache
 * kept in halves) in its own allocation, standing for an output the plan does not return.
 * Those inputs leave `inputs` (which then lists what a run is fed) for `states`. */
static adreno_status read_states(reader *r, const json_value *root) {
    adreno_model *m = r->m;
    adreno_status st;
    const json_value *arr = json_get(root, "state");
    if (!arr || (arr->type == JSON_ARRAY && arr->length == 0)) return check_f16_inputs_are_state(r);
    if (arr->type != JSON_ARRAY) return bad(r, "the top level", "'state' must be an array");
    if (m->format_version < 5)
        return bad(r, "state", "state (inputs kept on the device) needs format version 5 (this manifest says %d)",
                   m->format_version);
    if (arr->length > (size_t)m->num_inputs)
        return bad(r, "state", "%zu entries for %d inputs", arr->length, m->num_inputs);
    m->states = (state_desc *)calloc(arr->length, sizeof *m->states);
    if (!m->states) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    for (size_t i = 0; i < arr->length; i++) {
        char where[64];
        snprintf(where, sizeof where, "state[%zu]", i);
        const json_value *e = &arr->items[i];
        state_desc *d = &m->states[i];
        int64_t a;
        if (e->type != JSON_OBJECT) return bad(r, where, "must be an object");
        m->num_states = (int)i + 1; /* freed from here on */
        if ((st = need_string(r, e, "input", where, &d->input))) return st;
        if ((st = need_string(r, e, "output", where, &d->output))) return st;
        if ((st = need_int(r, e, "allocation", where, 0, m->num_allocs - 1, &a))) return st;
        d->allocation = (int)a;
        int k = find_input(m, d->input);
        if (k < 0) return bad(r, where, "names input '%s', which the model does not have", d->input);
        if ((m->inputs[k].dtype != ADRENO_DTYPE_F32 && m->inputs[k].dtype != DTYPE_F16_STATE) ||
            m->inputs[k].allocation != d->allocation)
            return bad(r, where, "input '%s' must be an f32 or f16 input in allocation %d", d->input, d->allocation);
        for (int j = 0; j < m->num_outputs; j++)
            if (strcmp(m->outputs[j].name, d->output) == 0)
                return bad(r, where, "stands for output '%s', which the plan also returns", d->output);
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->states[j].input, d->input) == 0) return bad(r, where, "input '%s' is state twice", d->input);
        d->bytes = m->allocs[a].bytes;
    }
    if ((st = check_f16_inputs_are_state(r))) return st;
    int kept = 0;
    for (int i = 0; i < m->num_inputs; i++) {
        if (find_state(m, m->inputs[i].name) >= 0) {
            free(m->inputs[i].name);
            continue;
        }
        m->inputs[kept++] = m->inputs[i];
    }
    m->num_inputs = kept;
    return ADRENO_OK;
}

/* One program's plan: allocations, weights, program, inputs, outputs, state, launches and
 * binaries, from `root` (the manifest, or one entry of a decoder artifact's "programs"). */
static adreno_status read_program(reader *r, const json_value *root) {
    adreno_model *m = r->m;
    const json_value *arr, *program, *weights;
    adreno_status st;
    if (root->type != JSON_OBJECT) return bad(r, "the top level", "must be an object");

    /* allocations */
    if ((st = need(r, root, "allocations", JSON_ARRAY, "the top level", &arr))) return st;
    if (arr->length > 1000000) return bad(r, "allocations", "too many entries");
    m->num_allocs = (int)arr->length;
    if (arr->length) {
        m->allocs = (alloc_desc *)calloc(arr->length, sizeof *m->allocs);
        if (!m->allocs) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    for (size_t i = 0; i < arr->length; i++) {
        char where[64];
        snprintf(where, sizeof where, "allocations[%zu]", i);
        const json_value *a = &arr->items[i], *kind;
        alloc_desc *d = &m->allocs[i];
        int64_t id;
        if (a->type != JSON_OBJECT) return bad(r, where, "must be an object");
        if ((st = need_int(r, a, "id", where, (int64_t)i, (int64_t)i, &id))) return st;
        if ((st = need(r, a, "kind", JSON_STRING, where, &kind))) return st;
        if (strcmp(kind->string, "buffer") == 0) {
            if ((st = need_int(r, a, "bytes", where, 4, MAX_BYTES, &d->bytes))) return st;
        } else if (strcmp(kind->string, "image") == 0) {
            const json_value *format;
            d->image = 1;
            m->has_images = 1;
            if ((st = need_int(r, a, "width", where, 1, MAX_IMAGE_SIDE, &d->width))) return st;
            if ((st = need_int(r, a, "height", where, 1, MAX_IMAGE_SIDE, &d->height))) return st;
            if ((st = need(r, a, "format", JSON_STRING, where, &format))) return st;
            if (strcmp(format->string, "rgba_f16") == 0) d->half = 1;
            else if (strcmp(format->string, "rgba_f32") != 0)
                return bad(r, where, "unknown image format '%s' (rgba_f32 or rgba_f16)", format->string);
            d->bytes = d->width * d->height * (d->half ? 8 : 16);
        } else {
            return bad(r, where, "unknown allocation kind '%s' (buffer or image)", kind->string);
        }
    }

    /* weights */
    if ((st = need(r, root, "weights", JSON_OBJECT, "the top level", &weights))) return st;
    {
        int64_t alignment;
        if ((st = need_int(r, weights, "alignment", "weights", WEIGHT_ALIGNMENT, WEIGHT_ALIGNMENT, &alignment)))
            return st;
        if ((st = need_int(r, weights, "bytes", "weights", 0, MAX_BYTES, &m->weights_bytes))) return st;
        if ((st = need_string(r, weights, "file", "weights", &m->weights_file))) return st;
        if ((st = need(r, weights, "entries", JSON_ARRAY, "weights", &arr))) return st;
        if (arr->length > 1000000) return bad(r, "weights.entries", "too many entries");
        m->num_weights = (int)arr->length;
        if (arr->length) {
            m->weights = (weight_desc *)calloc(arr->length, sizeof *m->weights);
            if (!m->weights) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
        }
        for (size_t i = 0; i < arr->length; i++) {
            char where[64];
            snprintf(where, sizeof where, "weights.entries[%zu]", i);
            const json_value *w = &arr->items[i], *dtype;
            weight_desc *d = &m->weights[i];
            int64_t id;
            if (w->type != JSON_OBJECT) return bad(r, where, "must be an object");
            if ((st = need_int(r, w, "id", where, (int64_t)i, (int64_t)i, &id))) return st;
            if ((st = need_string(r, w, "name", where, &d->name))) return st;
            if ((st = need(r, w, "dtype", JSON_STRING, where, &dtype))) return st;
            int size = strcmp(dtype->string, "f32") == 0 ? 4 : strcmp(dtype->string, "f16") == 0 ? 2 : 0;
            if (strcmp(dtype->string, "i32") == 0) { /* packed quantized weights (format version 4) */
                if (m->format_version < 4)
                    return bad(r, where, "i32 weights need format version 4 (this manifest says %d)",
                               m->format_version);
                size = 4;
            }
            if (!size) return bad(r, where, "unknown dtype '%s' (f32, f16 or i32)", dtype->string);
            if ((st = need_int(r, w, "count", where, 1, MAX_BYTES / 4, &d->count))) return st;
            if ((st = need_int(r, w, "offset", where, 0, MAX_BYTES, &d->offset))) return st;
            if ((st = need_int(r, w, "bytes", where, 1, MAX_BYTES, &d->bytes))) return st;
            if (d->bytes != d->count * size)
                return bad(r, where, "'bytes' %lld is not count %lld x %d", (long long)d->bytes, (long long)d->count,
                           size);
            if (d->offset % WEIGHT_ALIGNMENT)
                return bad(r, where, "offset %lld is not a multiple of %d", (long long)d->offset, WEIGHT_ALIGNMENT);
            if (d->offset + d->bytes > m->weights_bytes)
                return bad(r, where, "bytes [%lld, %lld) lie beyond weights.bytes = %lld", (long long)d->offset,
                           (long long)(d->offset + d->bytes), (long long)m->weights_bytes);
        }
    }

    /* program */
    if ((st = need(r, root, "program", JSON_OBJECT, "the top level", &program))) return st;
    if ((st = need_string(r, program, "source", "program", &m->source_file))) return st;
    if ((st = need(r, program, "build_options", JSON_ARRAY, "program", &arr))) return st;
    {
        for (size_t i = 0; i < arr->length; i++)
            if (arr->items[i].type != JSON_STRING) return bad(r, "program.build_options", "must be strings");
        if (!(m->build_options = join_strings(arr))) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    }

    /* inputs, outputs, launches */
    if ((st = read_tensors(r, root, "inputs", &m->inputs, &m->num_inputs))) return st;
    if ((st = read_tensors(r, root, "outputs", &m->outputs, &m->num_outputs))) return st;
    if ((st = read_states(r, root))) return st;
    if ((st = need(r, root, "launches", JSON_ARRAY, "the top level", &arr))) return st;
    if (arr->length > 1000000) return bad(r, "launches", "too many entries");
    m->num_launches = (int)arr->length;
    if (arr->length) {
        m->launches = (launch_desc *)calloc(arr->length, sizeof *m->launches);
        if (!m->launches) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    for (size_t i = 0; i < arr->length; i++)
        if ((st = read_launch(r, &arr->items[i], i, &m->launches[i]))) return st;

    /* binaries (only their description; the files are read when one matches the device) */
    arr = json_get(root, "binaries");
    if (arr && arr->type != JSON_ARRAY) return bad(r, "the top level", "'binaries' must be an array");
    if (arr && arr->length) {
        m->binaries = (binary_desc *)calloc(arr->length, sizeof *m->binaries);
        if (!m->binaries) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
        m->num_binaries = (int)arr->length;
        for (size_t i = 0; i < arr->length; i++) {
            char where[64];
            snprintf(where, sizeof where, "binaries[%zu]", i);
            const json_value *b = &arr->items[i], *opts;
            binary_desc *d = &m->binaries[i];
            if (b->type != JSON_OBJECT) return bad(r, where, "must be an object");
            if ((st = need_string(r, b, "file", where, &d->file))) return st;
            if ((st = need_string(r, b, "device", where, &d->device))) return st;
            if ((st = need_string(r, b, "platform", where, &d->platform))) return st;
            if ((st = need_string(r, b, "driver_version", where, &d->driver_version))) return st;
            if ((st = need(r, b, "build_options", JSON_ARRAY, where, &opts))) return st;
            for (size_t k = 0; k < opts->length; k++)
                if (opts->items[k].type != JSON_STRING) return bad(r, where, "build_options must be strings");
            if (!(d->build_options = join_strings(opts))) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
        }
    }
    return ADRENO_OK;
}

/* The manifest of one model: its format, then its plan. A decoder artifact is refused by
 * name (adreno_decoder_open reads those). */
static adreno_status read_plan(reader *r, const json_value *root) {
    adreno_status st = read_format(r, root);
    if (st) return st;
    if (json_get(root, "programs") || json_get(root, "decoder"))
        return fail(r->m, ADRENO_ERR_ARGUMENT,
                    "%s describes a decoder artifact (a prefill and a decode program sharing weights and a KV "
                    "cache), not one model: generate with it (adreno-run --generate ARTIFACT --prompt-ids 1,2,3, or "
                    "adreno_decoder_open in C)",
                    r->file);
    return read_program(r, root);
}

/* ------------------------------------------------------------------ files */

typedef struct {
    char *data;
    size_t size;
} blob;

/* Reads dir/name. It must be a regular file inside `dir` (a symbolic link may not lead out
 * of the artifact) and, when `expected` >= 0, exactly `expected` bytes long: checked before
 * reading, so a truncated copy is named as such and a huge file is not read in vain. */
static adreno_status read_file(adreno_model *m, const char *dir, const char *name, int64_t expected, blob *out) {
    char path[4096];
    struct stat info;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return fail(m, ADRENO_ERR_IO, "path too long: %s/%s", dir, name);
    if (stat(path, &info) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return fail(m, ADRENO_ERR_IO, "%s is missing from the artifact; copy the whole artifact directory again",
                        path);
        return fail(m, ADRENO_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    if (!S_ISREG(info.st_mode))
        return fail(m, ADRENO_ERR_IO, "%s is not a regular file; copy the whole artifact directory again", path);
    char *real_dir = realpath(dir, NULL), *real_path = realpath(path, NULL);
    size_t n = real_dir ? strlen(real_dir) : 0;
    int inside = real_dir && real_path && strncmp(real_dir, real_path, n) == 0 &&
                 (real_path[n] == '/' || (n == 1 && real_dir[0] == '/'));
    free(real_dir);
    free(real_path);
    if (!inside)
        return fail(m, ADRENO_ERR_FORMAT, "%s leads outside the artifact directory (a symbolic link?); an artifact "
                    "reads only its own files", path);
    if (expected >= 0 && (int64_t)info.st_size != expected)
        return fail(m, ADRENO_ERR_CORRUPT, "%s is %s: %lld bytes, but manifest.json says %lld; copy or save the "
                    "artifact again", path, (int64_t)info.st_size < expected ? "truncated" : "corrupted (wrong size)",
                    (long long)info.st_size, (long long)expected);
    if ((uint64_t)info.st_size > (uint64_t)MAX_BYTES)
        return fail(m, ADRENO_ERR_IO, "%s is too large (%lld bytes)", path, (long long)info.st_size);
    size_t size = (size_t)info.st_size;
    FILE *f = fopen(path, "rb");
    if (!f) return fail(m, ADRENO_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    out->data = (char *)malloc(size + 1);
    if (!out->data) {
        fclose(f);
        return fail(m, ADRENO_ERR_MEMORY, "out of host memory reading %s (%zu bytes)", path, size);
    }
    out->size = fread(out->data, 1, size, f);
    int err = ferror(f);
    fclose(f);
    if (err || out->size != size) return fail(m, ADRENO_ERR_IO, "cannot read %s (it changed while being read?)", path);
    out->data[out->size] = '\0';
    return ADRENO_OK;
}

/* Reads `name` (a file the manifest names) and checks it against files[name]. */
static adreno_status read_checked(adreno_model *m, const char *dir, const json_value *files, const char *name,
                                  int verify, blob *out) {
    char manifest[4200];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    if (!safe_name(name))
        return fail(m, ADRENO_ERR_FORMAT,
                    "%s is malformed: file name '%s' must be relative and stay inside the artifact", manifest, name);
    const json_value *entry = json_get(files, name), *sha = json_get(entry, "sha256"), *bytes = json_get(entry, "bytes");
    if (!entry || !sha || sha->type != JSON_STRING || !bytes || bytes->type != JSON_NUMBER || !bytes->is_integer)
        return fail(m, ADRENO_ERR_FORMAT,
                    "%s is malformed: 'files' has no {sha256, bytes} entry for %s; save the artifact again", manifest,
                    name);
    adreno_status st = read_file(m, dir, name, bytes->integer, out);
    if (st) return st;
    if (verify) {
        char hex[65];
        sha256_hex(out->data, out->size, hex);
        if (strcmp(hex, sha->string) != 0)
            return fail(m, ADRENO_ERR_CORRUPT,
                        "%s/%s is corrupted: its sha256 does not match manifest.json; copy or save the artifact again",
                        dir, name);
    }
    return ADRENO_OK;
}

/* ------------------------------------------------------------------ device */

static adreno_status cl_fail(adreno_model *m, cl_int e, const char *what) {
    return fail(m, ADRENO_ERR_OPENCL, "%s failed: %s (%d)", what, cl_error_name(e), (int)e);
}

/* An info string of a device or platform into out[size]; returns 1 when it was read
 * whole (0: the query failed, or the string was cut to fit). */
static int device_string(cl_device_id d, cl_device_info what, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    if (clGetDeviceInfo(d, what, 0, NULL, &n) != CL_SUCCESS || n == 0) return 0;
    if (n <= size) {
        if (clGetDeviceInfo(d, what, size, out, NULL) != CL_SUCCESS) out[0] = '\0';
        out[size - 1] = '\0';
        return out[0] != '\0' || n == 1;
    }
    char *whole = (char *)malloc(n);
    if (whole && clGetDeviceInfo(d, what, n, whole, NULL) == CL_SUCCESS) {
        memcpy(out, whole, size - 1);
        out[size - 1] = '\0';
    }
    free(whole);
    return 0;
}

static int platform_string(cl_platform_id p, cl_platform_info what, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    if (clGetPlatformInfo(p, what, 0, NULL, &n) != CL_SUCCESS || n == 0) return 0;
    if (n <= size) {
        if (clGetPlatformInfo(p, what, size, out, NULL) != CL_SUCCESS) out[0] = '\0';
        out[size - 1] = '\0';
        return out[0] != '\0' || n == 1;
    }
    char *whole = (char *)malloc(n);
    if (whole && clGetPlatformInfo(p, what, n, whole, NULL) == CL_SUCCESS) {
        memcpy(out, whole, size - 1);
        out[size - 1] = '\0';
    }
    free(whole);
    return 0;
}

static adreno_status pick_device(adreno_model *m, const adreno_options *o) {
    cl_uint nplat = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &nplat);
    if (e != CL_SUCCESS || nplat == 0) /* also CL_PLATFORM_NOT_FOUND_KHR (-1001): no driver */
        return fail(m, ADRENO_ERR_DEVICE,
                    "no OpenCL platform found (through %s): install an OpenCL driver, or point OCL_ICD_VENDORS at a "
                    "folder holding its .icd file",
                    adreno_opencl_library());
    cl_platform_id *plats = (cl_platform_id *)calloc(nplat, sizeof *plats);
    if (!plats) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    if ((e = clGetPlatformIDs(nplat, plats, NULL)) != CL_SUCCESS) {
        free(plats);
        return cl_fail(m, e, "clGetPlatformIDs");
    }
    cl_device_id chosen = NULL, first_gpu = NULL, first = NULL;
    int index = 0;
    char listing[2048] = "";
    for (cl_uint p = 0; p < nplat && !chosen; p++) {
        cl_uint ndev = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS || ndev == 0) continue;
        cl_device_id *devs = (cl_device_id *)calloc(ndev, sizeof *devs);
        if (!devs) {
            free(plats);
            return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
        }
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, devs, NULL) != CL_SUCCESS) ndev = 0;
        char pname[256];
        platform_string(plats[p], CL_PLATFORM_NAME, pname, sizeof pname);
        for (cl_uint d = 0; d < ndev && !chosen; d++, index++) {
            char dname[256];
            cl_device_type type = 0;
            device_string(devs[d], CL_DEVICE_NAME, dname, sizeof dname);
            clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            size_t used = strlen(listing);
            if (used < sizeof listing - 1)
                snprintf(listing + used, sizeof listing - used, "%s%d: %s / %s", used ? "; " : "", index, pname, dname);
            if (!first) first = devs[d];
            if (!first_gpu && (type & CL_DEVICE_TYPE_GPU)) first_gpu = devs[d];
            if (o->device_index >= 0) {
                if (index == o->device_index) chosen = devs[d];
            } else if (o->device_match) {
                if (contains_nocase(pname, o->device_match) || contains_nocase(dname, o->device_match))
                    chosen = devs[d];
            }
        }
        free(devs);
    }
    free(plats);
    if (o->device_index < 0 && !o->device_match) chosen = first_gpu ? first_gpu : first;
    if (!chosen) {
        if (o->device_index >= 0)
            return fail(m, ADRENO_ERR_DEVICE, "no OpenCL device %d; the devices are: %s", o->device_index,
                        *listing ? listing : "none");
        if (o->device_match)
            return fail(m, ADRENO_ERR_DEVICE, "no OpenCL device matches '%s'; the devices are: %s", o->device_match,
                        *listing ? listing : "none");
        return fail(m, ADRENO_ERR_DEVICE, "no OpenCL device found");
    }
    m->device = chosen;
    m->context = clCreateContext(NULL, 1, &chosen, NULL, NULL, &e);
    if (!m->context) return cl_fail(m, e, "clCreateContext");
    return ADRENO_OK;
}

/* Whether the device can hold the plan's images and buffers; names what does not fit. */
static adreno_status check_limits(adreno_model *m) {
    cl_ulong max_alloc = 0, global_mem = 0;
    clGetDeviceInfo(m->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(m->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global_mem, &global_mem, NULL);
    if (m->has_images) {
        cl_bool images = CL_FALSE;
        size_t max_w = 0, max_h = 0;
        clGetDeviceInfo(m->device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL);
        if (!images)
            return fail(m, ADRENO_ERR_DEVICE,
                        "%s has no image support, and this model keeps tensors in images; recompile it without "
                        "textures (adreno-mlir compile --textures off) or for this device",
                        m->device_name);
        clGetDeviceInfo(m->device, CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof max_w, &max_w, NULL);
        clGetDeviceInfo(m->device, CL_DEVICE_IMAGE2D_MAX_HEIGHT, sizeof max_h, &max_h, NULL);
        for (int i = 0; i < m->num_allocs; i++) {
            const alloc_desc *a = &m->allocs[i];
            if (a->image && ((size_t)a->width > max_w || (size_t)a->height > max_h))
                return fail(m, ADRENO_ERR_DEVICE,
                            "allocation %d is a %lldx%lld image, larger than %s's image limit of %zux%zu; recompile "
                            "the model for this device (adreno-mlir compile --target device)",
                            i, (long long)a->width, (long long)a->height, m->device_name, max_w, max_h);
        }
    }
    uint64_t total = 0;
    for (int i = 0; i < m->num_allocs; i++) {
        const alloc_desc *a = &m->allocs[i];
        if (!a->image && max_alloc && (uint64_t)a->bytes > max_alloc)
            return fail(m, ADRENO_ERR_DEVICE,
                        "allocation %d needs %lld bytes, more than %s's maximum allocation of %llu bytes", i,
                        (long long)a->bytes, m->device_name, (unsigned long long)max_alloc);
        total += (uint64_t)a->bytes;
    }
    for (int i = 0; i < m->num_weights; i++) {
        const weight_desc *w = &m->weights[i];
        if (max_alloc && (uint64_t)w->bytes > max_alloc)
            return fail(m, ADRENO_ERR_DEVICE,
                        "weight %d (%s) needs %lld bytes, more than %s's maximum allocation of %llu bytes", i, w->name,
                        (long long)w->bytes, m->device_name, (unsigned long long)max_alloc);
        total += (uint64_t)w->bytes;
    }
    if (global_mem && total > global_mem)
        return fail(m, ADRENO_ERR_DEVICE, "the model needs %llu bytes of device memory; %s has %llu",
                    (unsigned long long)total, m->device_name, (unsigned long long)global_mem);
    return ADRENO_OK;
}

/* Whether `needle` occurs in the first `size` bytes of `text` (not NUL-terminated). */
static int contains(const char *text, size_t size, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; text && n <= size && i <= size - n; i++)
        if (text[i] == needle[0] && memcmp(text + i, needle, n) == 0) return 1;
    return 0;
}

/* A program that computes in half (precision fp16: the printer enables cl_khr_fp16)
 * needs a device with the extension; say so instead of showing the compiler's errors. */
static adreno_status check_half(adreno_model *m, const char *source, size_t size) {
    if (!contains(source, size, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable")) return ADRENO_OK;
    size_t len = 0;
    clGetDeviceInfo(m->device, CL_DEVICE_EXTENSIONS, 0, NULL, &len);
    char *ext = calloc(len + 1, 1);
    if (!ext) return fail(m, ADRENO_ERR_MEMORY, "out of memory reading the device's extensions");
    if (len) clGetDeviceInfo(m->device, CL_DEVICE_EXTENSIONS, len, ext, NULL);
    int has = contains(ext, strlen(ext), "cl_khr_fp16");
    free(ext);
    if (!has)
        return fail(m, ADRENO_ERR_DEVICE,
                    "this model computes in half (compiled with precision fp16), which needs the cl_khr_fp16 "
                    "extension; %s does not have it. Recompile it with --precision fp16-acc32 (fp16 storage, fp32 "
                    "arithmetic) or fp32",
                    m->device_name);
    return ADRENO_OK;
}

/* ------------------------------------------------------------------ program */

static adreno_status build(adreno_model *m, const char *what) {
    cl_int e = clBuildProgram(m->program, 1, &m->device, m->build_options, NULL, NULL);
    if (e == CL_SUCCESS) return ADRENO_OK;
    size_t n = 0;
    char log[2048] = "";
    if (clGetProgramBuildInfo(m->program, m->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n) {
        char *full = (char *)malloc(n + 1);
        if (full) {
            if (clGetProgramBuildInfo(m->program, m->device, CL_PROGRAM_BUILD_LOG, n, full, NULL) == CL_SUCCESS) {
                full[n] = '\0';
                snprintf(log, sizeof log, "%s", full);
            }
            free(full);
        }
    }
    return fail(m, ADRENO_ERR_BUILD, "the OpenCL compiler of %s rejected %s (%s, options '%s'):\n%s", m->device_name,
                what, cl_error_name(e), m->build_options, log);
}

static adreno_status program_from_source(adreno_model *m, const char *source, size_t size, const char *what) {
    cl_int e;
    m->program = clCreateProgramWithSource(m->context, 1, &source, &size, &e);
    if (!m->program) return cl_fail(m, e, "clCreateProgramWithSource");
    m->origin = "built from source";
    return build(m, what);
}

/* The embedded binary for this device, driver and options, if there is one and the
 * driver takes it; else nothing happens (the caller builds the source). */
static adreno_status try_binary(adreno_model *m, const char *dir, const json_value *files, int verify) {
    char dname[1024], pname[1024], driver[1024];
    cl_platform_id platform = NULL;
    clGetDeviceInfo(m->device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
    /* Only whole strings can match: a binary is never taken on a partial description. */
    if (!device_string(m->device, CL_DEVICE_NAME, dname, sizeof dname) ||
        !device_string(m->device, CL_DRIVER_VERSION, driver, sizeof driver) ||
        !platform_string(platform, CL_PLATFORM_NAME, pname, sizeof pname))
        return ADRENO_OK;
    for (int i = 0; i < m->num_binaries; i++) {
        const binary_desc *b = &m->binaries[i];
        if (strcmp(b->device, dname) || strcmp(b->platform, pname) || strcmp(b->driver_version, driver) ||
            strcmp(b->build_options, m->build_options))
            continue;
        blob data = {0};
        adreno_status st = read_checked(m, dir, files, b->file, verify, &data);
        if (st) {
            free(data.data);
            return st; /* a listed binary that is missing or corrupt is a broken artifact */
        }
        const unsigned char *bytes = (const unsigned char *)data.data;
        cl_int e, status;
        m->program = clCreateProgramWithBinary(m->context, 1, &m->device, &data.size, &bytes, &status, &e);
        free(data.data);
        if (m->program && clBuildProgram(m->program, 1, &m->device, m->build_options, NULL, NULL) == CL_SUCCESS) {
            m->origin = "artifact binary";
            return ADRENO_OK;
        }
        if (m->program) clReleaseProgram(m->program);
        m->program = NULL; /* the driver refused it: build the source instead */
        break;
    }
    return ADRENO_OK;
}

/* ------------------------------------------------------------------ memory and kernels */

static int state_of_allocation(const adreno_model *m, int allocation) {
    for (int i = 0; i < m->num_states; i++)
        if (m->states[i].allocation == allocation) return i;
    return -1;
}

/* Writes zeros over every state buffer of the model (blocking). */
static adreno_status zero_states(adreno_model *m) {
    int64_t most = 0;
    for (int i = 0; i < m->num_states; i++)
        if (m->states[i].bytes > most) most = m->states[i].bytes;
    if (!m->num_states) return ADRENO_OK;
    void *zeros = calloc((size_t)most, 1);
    if (!zeros) return fail(m, ADRENO_ERR_MEMORY, "out of host memory (%lld bytes of zeros for the state)",
                            (long long)most);
    cl_int e = CL_SUCCESS;
    int i = 0;
    for (; i < m->num_states && e == CL_SUCCESS; i++) {
        const state_desc *s = &m->states[i];
        e = clEnqueueWriteBuffer(m->queue, m->alloc_mem[s->allocation], CL_TRUE, 0, (size_t)s->bytes, zeros, 0, NULL,
                                 NULL);
    }
    free(zeros);
    if (e != CL_SUCCESS)
        return fail(m, ADRENO_ERR_OPENCL, "zeroing state '%s' failed: %s (%d)", m->states[i - 1].input,
                    cl_error_name(e), (int)e);
    return ADRENO_OK;
}

static adreno_status create_memory(adreno_model *m, const char *weights_blob) {
    cl_int e;
    adreno_status st;
    const adreno_model *peer = m->share;
    int fresh_state = 0;
    if (m->num_allocs) {
        m->alloc_mem = (cl_mem *)calloc((size_t)m->num_allocs, sizeof *m->alloc_mem);
        m->alloc_owned = (unsigned char *)calloc((size_t)m->num_allocs, 1);
        if (!m->alloc_mem || !m->alloc_owned) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    for (int i = 0; i < m->num_allocs; i++) {
        const alloc_desc *a = &m->allocs[i];
        int s = state_of_allocation(m, i), ps = s >= 0 && peer ? find_state(peer, m->states[s].input) : -1;
        if (ps >= 0) { /* the other program's buffer of this state */
            if (peer->states[ps].bytes != m->states[s].bytes)
                return fail(m, ADRENO_ERR_FORMAT,
                            "state '%s' is %lld bytes in one program and %lld in the other; programs sharing it must "
                            "be compiled for the same cache shape: save the decoder again",
                            m->states[s].input, (long long)peer->states[ps].bytes, (long long)m->states[s].bytes);
            m->alloc_mem[i] = peer->alloc_mem[peer->states[ps].allocation];
            continue;
        }
        m->alloc_owned[i] = 1;
        fresh_state |= s >= 0;
        if (a->image) {
            cl_image_format format = {CL_RGBA, (cl_channel_type)(a->half ? CL_HALF_FLOAT : CL_FLOAT)};
            cl_image_desc desc;
            memset(&desc, 0, sizeof desc);
            desc.image_type = CL_MEM_OBJECT_IMAGE2D;
            desc.image_width = (size_t)a->width;
            desc.image_height = (size_t)a->height;
            m->alloc_mem[i] = clCreateImage(m->context, CL_MEM_READ_WRITE, &format, &desc, NULL, &e);
            if (!m->alloc_mem[i])
                return fail(m, e == CL_IMAGE_FORMAT_NOT_SUPPORTED ? ADRENO_ERR_DEVICE : ADRENO_ERR_OPENCL,
                            "creating allocation %d (a %lldx%lld %s image) on %s failed: %s (%d)", i,
                            (long long)a->width, (long long)a->height, a->half ? "rgba_f16" : "rgba_f32",
                            m->device_name, cl_error_name(e), (int)e);
        } else {
            m->alloc_mem[i] = clCreateBuffer(m->context, CL_MEM_READ_WRITE, (size_t)a->bytes, NULL, &e);
            if (!m->alloc_mem[i])
                return fail(m, ADRENO_ERR_OPENCL, "creating allocation %d (a buffer of %lld bytes) on %s failed: %s (%d)",
                            i, (long long)a->bytes, m->device_name, cl_error_name(e), (int)e);
        }
    }
    if (fresh_state && (st = zero_states(m))) return st; /* created zero-filled, never copied per run */
    if (m->num_weights) {
        m->weight_mem = (cl_mem *)calloc((size_t)m->num_weights, sizeof *m->weight_mem);
        m->weight_owned = (unsigned char *)calloc((size_t)m->num_weights, 1);
        if (!m->weight_mem || !m->weight_owned) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    for (int i = 0; i < m->num_weights; i++) {
        const weight_desc *w = &m->weights[i];
        /* One blob range is one weight: the other program's buffer of it, when it has one. */
        int shared = -1;
        for (int j = 0; peer && j < peer->num_weights && shared < 0; j++)
            if (peer->weights[j].offset == w->offset && peer->weights[j].bytes == w->bytes) shared = j;
        if (shared >= 0) {
            m->weight_mem[i] = peer->weight_mem[shared];
            continue;
        }
        m->weight_owned[i] = 1;
        m->weight_mem[i] = clCreateBuffer(m->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)w->bytes,
                                          (void *)(weights_blob + w->offset), &e);
        if (!m->weight_mem[i])
            return fail(m, ADRENO_ERR_OPENCL, "uploading weight %d (%s, %lld bytes) to %s failed: %s (%d)", i, w->name,
                        (long long)w->bytes, m->device_name, cl_error_name(e), (int)e);
    }
    /* Constant outputs stay on the host: every run copies them out. */
    for (int i = 0; i < m->num_outputs; i++) {
        tensor_desc *t = &m->outputs[i];
        if (t->constant_offset < 0) continue;
        t->constant = (float *)malloc(t->count ? (size_t)t->count * 4 : 1);
        if (!t->constant) return fail(m, ADRENO_ERR_MEMORY, "out of host memory (constant output %s)", t->name);
        memcpy(t->constant, weights_blob + t->constant_offset, (size_t)t->count * 4);
    }
    return ADRENO_OK;
}

static adreno_status create_kernels(adreno_model *m, const char *source_name) {
    cl_int e;
    size_t max_items[3] = {0, 0, 0}, *all = NULL;
    cl_uint dims = 0;
    /* The device may report more than three dimensions: read them all, keep three. */
    if (clGetDeviceInfo(m->device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof dims, &dims, NULL) == CL_SUCCESS &&
        dims > 0 && (all = (size_t *)calloc(dims, sizeof *all)) != NULL &&
        clGetDeviceInfo(m->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof *all, all, NULL) == CL_SUCCESS)
        for (cl_uint d = 0; d < dims && d < 3; d++) max_items[d] = all[d];
    free(all);
    if (m->num_launches) {
        m->kernels = (cl_kernel *)calloc((size_t)m->num_launches, sizeof *m->kernels);
        if (!m->kernels) return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    for (int i = 0; i < m->num_launches; i++) {
        launch_desc *l = &m->launches[i];
        cl_kernel k = m->kernels[i] = clCreateKernel(m->program, l->kernel, &e);
        if (!k) {
            if (e == CL_INVALID_KERNEL_NAME)
                return fail(m, ADRENO_ERR_BUILD,
                            "launch %d runs kernel '%s', which is not in the program (%s); the artifact is "
                            "inconsistent: save it again",
                            i, l->kernel, source_name);
            return fail(m, ADRENO_ERR_OPENCL, "clCreateKernel('%s') for launch %d failed: %s (%d)", l->kernel, i,
                        cl_error_name(e), (int)e);
        }
        cl_uint nargs = 0;
        if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) == CL_SUCCESS &&
            nargs != (cl_uint)l->num_args)
            return fail(m, ADRENO_ERR_FORMAT,
                        "launch %d passes %d arguments to kernel '%s', which takes %u; the artifact is inconsistent: "
                        "save it again",
                        i, l->num_args, l->kernel, (unsigned)nargs);
        for (int a = 0; a < l->num_args; a++) {
            const arg_desc *ad = &l->args[a];
            switch (ad->kind) {
            case ARG_ALLOCATION: e = clSetKernelArg(k, (cl_uint)a, sizeof(cl_mem), &m->alloc_mem[ad->index]); break;
            case ARG_WEIGHT: e = clSetKernelArg(k, (cl_uint)a, sizeof(cl_mem), &m->weight_mem[ad->index]); break;
            case ARG_I32: e = clSetKernelArg(k, (cl_uint)a, sizeof(cl_int), &ad->i32); break;
            default: e = clSetKernelArg(k, (cl_uint)a, sizeof(cl_float), &ad->f32); break;
            }
            if (e == CL_INVALID_ARG_VALUE || e == CL_INVALID_ARG_SIZE || e == CL_INVALID_MEM_OBJECT ||
                e == CL_INVALID_SAMPLER || e == CL_INVALID_ARG_INDEX)
                return fail(m, ADRENO_ERR_FORMAT,
                            "launch %d: argument %d of kernel '%s' does not fit what the kernel declares (%s); the "
                            "artifact is inconsistent: save it again",
                            i, a, l->kernel, cl_error_name(e));
            if (e != CL_SUCCESS)
                return fail(m, ADRENO_ERR_OPENCL, "clSetKernelArg(launch %d, kernel '%s', argument %d) failed: %s (%d)",
                            i, l->kernel, a, cl_error_name(e), (int)e);
        }
        size_t required[3] = {0, 0, 0};
        if (l->has_local &&
            clGetKernelWorkGroupInfo(k, m->device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof required, required,
                                     NULL) == CL_SUCCESS &&
            required[0] != 0) {
            /* The kernel was compiled for exactly this work-group (reqd_work_group_size: local
             * sums, tiles in local memory): never NULL, the enqueue reports a size it cannot run. */
        } else if (l->has_local) {
            /* A planned local size is a preference (docs/artifact.md): above this kernel's
             * limit on this device, the driver chooses, as the Python runtime does. */
            size_t limit = 0;
            uint64_t product = 1; /* each entry <= 65536: no overflow in 64 bits */
            for (cl_uint d = 0; d < l->dims; d++) {
                product *= l->local[d];
                if (max_items[d] && l->local[d] > max_items[d]) product = UINT64_MAX;
            }
            if (clGetKernelWorkGroupInfo(k, m->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof limit, &limit, NULL) !=
                    CL_SUCCESS ||
                product > (uint64_t)limit)
                l->has_local = 0;
        }
    }
    return ADRENO_OK;
}

/* Outputs above this go straight into the caller's memory even in AUTO mode on a discrete
 * GPU: copying a large output out of a pinned buffer costs more than the pinned transfer
 * saves (H200, lraspp's 4 MB output: 2.45 ms of copies through pinned memory). */
#define PINNED_OUTPUT_MAX ((size_t)1 << 20)

static adreno_status create_staging(adreno_model *m, adreno_io_mode mode) {
    cl_int e;
    int discrete = 0;
    if (mode == ADRENO_IO_AUTO) {
        cl_device_type type = 0;
        cl_bool unified = CL_TRUE;
        clGetDeviceInfo(m->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
        clGetDeviceInfo(m->device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
        discrete = (type & CL_DEVICE_TYPE_GPU) && !unified;
    }
    int n = m->num_inputs + m->num_outputs;
    m->stage = (void **)calloc((size_t)n, sizeof *m->stage);
    m->pinned = (unsigned char *)calloc((size_t)n, 1);
    m->stage_mem = (cl_mem *)calloc((size_t)n, sizeof *m->stage_mem);
    m->input_set = (unsigned char *)calloc((size_t)m->num_inputs + 1, 1);
    if (!m->stage || !m->pinned || !m->stage_mem || !m->input_set)
        return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    for (int i = 0; i < n; i++) {
        const tensor_desc *t = i < m->num_inputs ? &m->inputs[i] : &m->outputs[i - m->num_inputs];
        size_t bytes = (size_t)t->count * 4;
        int constant = i >= m->num_inputs && t->constant_offset >= 0; /* copied on the host, never read back */
        m->pinned[i] = !constant && (mode == ADRENO_IO_PINNED ||
                                     (discrete && (i < m->num_inputs || bytes <= PINNED_OUTPUT_MAX)));
        m->num_pinned += m->pinned[i];
        if (!m->pinned[i]) {
            m->stage[i] = calloc((size_t)t->count, 4);
            if (!m->stage[i]) return fail(m, ADRENO_ERR_MEMORY, "out of host memory (%zu bytes for %s)", bytes, t->name);
            continue;
        }
        m->stage_mem[i] = clCreateBuffer(m->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
        if (!m->stage_mem[i]) return cl_fail(m, e, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR) for input/output staging");
        m->stage[i] = clEnqueueMapBuffer(m->queue, m->stage_mem[i], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                  bytes, 0, NULL, NULL, &e);
        if (!m->stage[i]) return cl_fail(m, e, "clEnqueueMapBuffer for input/output staging");
        memset(m->stage[i], 0, bytes);
    }
    return ADRENO_OK;
}

/* ------------------------------------------------------------------ open / close */

void adreno_options_init(adreno_options *o) {
    memset(o, 0, sizeof *o);
    o->device_index = -1;
    o->verify_checksums = 1;
    o->io_mode = ADRENO_IO_AUTO;
    o->opencl_library = NULL;
}

static void free_plan(adreno_model *m) {
    for (int i = 0; i < m->num_weights; i++) free(m->weights ? m->weights[i].name : NULL);
    for (int i = 0; i < m->num_inputs; i++) free(m->inputs ? m->inputs[i].name : NULL);
    for (int i = 0; i < m->num_outputs && m->outputs; i++) {
        free(m->outputs[i].name);
        free(m->outputs[i].constant);
    }
    for (int i = 0; i < m->num_launches; i++)
        if (m->launches) {
            free(m->launches[i].kernel);
            free(m->launches[i].node);
            free(m->launches[i].args);
        }
    for (int i = 0; i < m->num_binaries; i++)
        if (m->binaries) {
            free(m->binaries[i].file);
            free(m->binaries[i].device);
            free(m->binaries[i].platform);
            free(m->binaries[i].driver_version);
            free(m->binaries[i].build_options);
        }
    for (int i = 0; i < m->num_states && m->states; i++) {
        free(m->states[i].input);
        free(m->states[i].output);
    }
    free(m->states);
    free(m->allocs);
    free(m->weights);
    free(m->inputs);
    free(m->outputs);
    free(m->launches);
    free(m->binaries);
    free(m->build_options);
    free(m->source_file);
    free(m->weights_file);
}

void adreno_close(adreno_model *m) {
    if (!m) return;
    int n = m->num_inputs + m->num_outputs;
    if (m->stage && m->pinned) {
        for (int i = 0; i < n; i++) {
            if (m->pinned[i]) {
                if (m->stage_mem[i] && m->stage[i])
                    clEnqueueUnmapMemObject(m->queue, m->stage_mem[i], m->stage[i], 0, NULL, NULL);
            } else {
                free(m->stage[i]);
            }
        }
        if (m->num_pinned && m->queue) clFinish(m->queue);
    }
    if (m->stage_mem)
        for (int i = 0; i < n; i++)
            if (m->stage_mem[i]) clReleaseMemObject(m->stage_mem[i]);
    if (m->kernels)
        for (int i = 0; i < m->num_launches; i++)
            if (m->kernels[i]) clReleaseKernel(m->kernels[i]);
    if (m->alloc_mem)
        for (int i = 0; i < m->num_allocs; i++)
            if (m->alloc_mem[i] && m->alloc_owned[i]) clReleaseMemObject(m->alloc_mem[i]);
    if (m->weight_mem)
        for (int i = 0; i < m->num_weights; i++)
            if (m->weight_mem[i] && m->weight_owned[i]) clReleaseMemObject(m->weight_mem[i]);
    if (m->program) clReleaseProgram(m->program);
    if (m->profiling_queue) clReleaseCommandQueue(m->profiling_queue);
    if (m->queue) clReleaseCommandQueue(m->queue);
    if (m->context) clReleaseContext(m->context);
    free(m->stage);
    free(m->input_set);
    free(m->pinned);
    free(m->stage_mem);
    free(m->kernels);
    free(m->alloc_mem);
    free(m->weight_mem);
    free(m->alloc_owned);
    free(m->weight_owned);
    free_plan(m);
    free(m);
}

/* Everything after the files are in memory. `dir` is the artifact directory (NULL when
 * opening from memory: no binaries, no checksums). */
static adreno_status instantiate(adreno_model *m, const adreno_options *o, const char *dir, const json_value *files,
                                 const char *source, size_t source_size, const char *weights, size_t weights_size) {
    adreno_status st;
    cl_int e;
    char source_name[4200];
    snprintf(source_name, sizeof source_name, "%s%s%s", dir ? dir : "", dir ? "/" : "", m->source_file);
    if ((int64_t)weights_size < m->weights_bytes)
        return fail(m, ADRENO_ERR_CORRUPT,
                    "%s%s%s holds %zu bytes, fewer than the %lld the weights table needs; copy or save the artifact "
                    "again",
                    dir ? dir : "the weights blob", dir ? "/" : "", dir ? m->weights_file : "", weights_size,
                    (long long)m->weights_bytes);
    if (o->program && !o->context)
        return fail(m, ADRENO_ERR_ARGUMENT, "options.program needs options.context (the program's context)");
    /* The first OpenCL call of the model: the artifact has been checked completely by now,
     * so a malformed one is reported as such even where there is no OpenCL at all. */
    if (adreno_cl_load(o->opencl_library, m->error, sizeof m->error) != 0) return ADRENO_ERR_OPENCL_LIBRARY;
    if (o->context) {
        if (!o->device) return fail(m, ADRENO_ERR_ARGUMENT, "options.context needs options.device");
        m->context = (cl_context)o->context;
        m->device = (cl_device_id)o->device;
        if ((e = clRetainContext(m->context)) != CL_SUCCESS) {
            m->context = NULL;
            return cl_fail(m, e, "clRetainContext(options.context)");
        }
    } else if ((st = pick_device(m, o))) {
        return st;
    }
    {
        char dname[256], pname[256], version[256];
        cl_platform_id platform = NULL;
        device_string(m->device, CL_DEVICE_NAME, dname, sizeof dname);
        device_string(m->device, CL_DEVICE_VERSION, version, sizeof version);
        clGetDeviceInfo(m->device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
        platform_string(platform, CL_PLATFORM_NAME, pname, sizeof pname);
        snprintf(m->device_name, sizeof m->device_name, "%s / %s (%s)", pname, dname, version);
    }
    if ((st = check_limits(m))) return st;
    if ((st = check_half(m, source, source_size))) return st;
    m->queue = clCreateCommandQueue(m->context, m->device, 0, &e);
    if (!m->queue) return cl_fail(m, e, "clCreateCommandQueue");
    if (o->program) {
        m->program = (cl_program)o->program;
        if ((e = clRetainProgram(m->program)) != CL_SUCCESS) {
            m->program = NULL;
            return cl_fail(m, e, "clRetainProgram(options.program)");
        }
        m->origin = "given";
    } else {
        if (dir && (st = try_binary(m, dir, files, o->verify_checksums))) return st;
        if (!m->program && (st = program_from_source(m, source, source_size, source_name))) return st;
    }
    if ((st = create_memory(m, weights))) return st;
    if ((st = create_kernels(m, source_name))) return st;
    if ((st = create_staging(m, o->io_mode))) return st;
    return ADRENO_OK;
}

static adreno_status finish_open(adreno_model *m, adreno_status st, adreno_model **out, char *error, size_t size) {
    if (st == ADRENO_OK) {
        *out = m;
        return ADRENO_OK;
    }
    if (error && size) snprintf(error, size, "%s", m->error);
    adreno_close(m);
    return st;
}

static adreno_status start(adreno_model **out, char *error, size_t size, adreno_model **m) {
    if (error && size) error[0] = '\0';
    if (!out) {
        if (error && size) snprintf(error, size, "adreno_open: the model pointer is NULL");
        return ADRENO_ERR_ARGUMENT;
    }
    *out = NULL;
    *m = (adreno_model *)calloc(1, sizeof **m);
    if (!*m) {
        if (error && size) snprintf(error, size, "out of host memory");
        return ADRENO_ERR_MEMORY;
    }
    return ADRENO_OK;
}

adreno_status adreno_open(const char *path, const adreno_options *options, adreno_model **out, char *error,
                          size_t error_size) {
    adreno_model *m;
    adreno_status st = start(out, error, error_size, &m);
    if (st) return st;
    adreno_options defaults;
    if (!options) {
        adreno_options_init(&defaults);
        options = &defaults;
    }
    if (!path) return finish_open(m, fail(m, ADRENO_ERR_ARGUMENT, "adreno_open: the path is NULL"), out, error, error_size);
    char file[4200];
    snprintf(file, sizeof file, "%s/manifest.json", path);
    blob manifest = {0}, source = {0}, weights = {0};
    json_doc *doc = NULL;
    const json_value *root = NULL, *files;
    reader r = {m, file, NULL};
    struct stat info;
    if (stat(path, &info) != 0) {
        st = fail(m, ADRENO_ERR_IO, "no artifact at %s (%s)", path, strerror(errno));
        goto done;
    }
    if (!S_ISDIR(info.st_mode)) {
        st = fail(m, ADRENO_ERR_IO,
                  "%s is not an adreno-mlir artifact: artifacts are directories (X.adreno/ with manifest.json), "
                  "written by adreno-mlir compile -o X.adreno",
                  path);
        goto done;
    }
    if ((st = read_file(m, path, "manifest.json", -1, &manifest))) {
        if (st == ADRENO_ERR_IO && strstr(m->error, "is missing"))
            fail(m, ADRENO_ERR_IO, "%s is not an adreno-mlir artifact: %s is missing (an artifact is a directory "
                 "written by adreno-mlir compile -o X.adreno)", path, file);
        goto done;
    }
    {
        char why[512];
        doc = json_parse(manifest.data, manifest.size, &root, why, sizeof why);
        if (!doc) {
            st = strcmp(why, "out of memory") == 0 ? fail(m, ADRENO_ERR_MEMORY, "out of host memory reading %s", file)
                                                    : fail(m, ADRENO_ERR_FORMAT, "%s is not valid JSON: %s", file, why);
            goto done;
        }
    }
    if ((st = read_plan(&r, root))) goto done;
    files = json_get(root, "files");
    if (!files || files->type != JSON_OBJECT) {
        st = bad(&r, "the top level", "'files' must map file names to {sha256, bytes}");
        goto done;
    }
    if ((st = read_checked(m, path, files, m->source_file, options->verify_checksums, &source))) goto done;
    if ((st = read_checked(m, path, files, m->weights_file, options->verify_checksums, &weights))) goto done;
    st = instantiate(m, options, path, files, source.data, source.size, weights.data, weights.size);
done:
    json_free(doc);
    free(manifest.data);
    free(source.data);
    free(weights.data);
    return finish_open(m, st, out, error, error_size);
}

adreno_status adreno_open_memory(const char *manifest_json, size_t manifest_size, const char *source,
                                 size_t source_size, const void *weights, size_t weights_size,
                                 const adreno_options *options, adreno_model **out, char *error, size_t error_size) {
    adreno_model *m;
    adreno_status st = start(out, error, error_size, &m);
    if (st) return st;
    adreno_options defaults;
    if (!options) {
        adreno_options_init(&defaults);
        options = &defaults;
    }
    if (!manifest_json || !source || (!weights && weights_size))
        return finish_open(m, fail(m, ADRENO_ERR_ARGUMENT, "adreno_open_memory: a NULL buffer"), out, error,
                           error_size);
    const json_value *root = NULL;
    char why[512];
    reader r = {m, "the manifest", NULL};
    json_doc *doc = json_parse(manifest_json, manifest_size, &root, why, sizeof why);
    if (!doc) {
        st = strcmp(why, "out of memory") == 0 ? fail(m, ADRENO_ERR_MEMORY, "out of host memory reading the manifest")
                                                : fail(m, ADRENO_ERR_FORMAT, "the manifest is not valid JSON: %s", why);
    } else if ((st = read_plan(&r, root)) == ADRENO_OK) {
        st = instantiate(m, options, NULL, NULL, source, source_size, (const char *)weights, weights_size);
    }
    json_free(doc);
    return finish_open(m, st, out, error, error_size);
}

/* ------------------------------------------------------------------ running */

const char *adreno_error(const adreno_model *m) { return m ? m->error : "no model (adreno_open failed)"; }

static int check_model(adreno_model *m) { return m != NULL; }

/* Every id of i32 input `index` in [-bound, bound), else ADRENO_ERR_INPUT naming the first one outside. */
static adreno_status check_ids(adreno_model *m, const char *fn, int index, const int32_t *ids) {
    const tensor_desc *t = &m->inputs[index];
    const int64_t bound = t->bound;
    for (int64_t j = 0; j < t->count; j++) {
        int64_t id = ids[j];
        if (id < -bound || id >= bound) {
            int64_t outside = 0;
            for (int64_t k = j; k < t->count; k++) outside += (int64_t)ids[k] < -bound || (int64_t)ids[k] >= bound;
            return fail(m, ADRENO_ERR_INPUT,
                        "%s: input %d ('%s') has id %lld at element %lld, outside [-%lld, %lld) (the extent of the "
                        "table it indexes; %lld of its %lld ids are outside); nothing was uploaded",
                        fn, index, t->name, (long long)id, (long long)j, (long long)bound, (long long)bound,
                        (long long)outside, (long long)t->count);
        }
    }
    return ADRENO_OK;
}

static adreno_status set_input(adreno_model *m, const char *fn, int index, adreno_dtype dtype, const void *data,
                               size_t count) {
    if (!check_model(m)) return ADRENO_ERR_ARGUMENT;
    if (index < 0 || index >= m->num_inputs)
        return fail(m, ADRENO_ERR_ARGUMENT, "%s: no input %d (the model has %d)", fn, index, m->num_inputs);
    const tensor_desc *t = &m->inputs[index];
    if (t->dtype != dtype)
        return fail(m, ADRENO_ERR_ARGUMENT, "%s: input %d ('%s') is %s; give it with %s", fn, index, t->name,
                    adreno_dtype_name(t->dtype), t->dtype == ADRENO_DTYPE_I32 ? "adreno_set_input_i32" : "adreno_set_input");
    if (!data || count != (size_t)t->count)
        return fail(m, ADRENO_ERR_ARGUMENT, "%s: input %d ('%s') takes %lld %s, got %zu%s", fn, index, t->name,
                    (long long)t->count, dtype == ADRENO_DTYPE_I32 ? "int32 ids" : "floats", count,
                    data ? "" : " (NULL data)");
    adreno_status st;
    if (dtype == ADRENO_DTYPE_I32 && (st = check_ids(m, fn, index, (const int32_t *)data))) {
        m->input_set[index] = 0; /* never run on ids that were refused, nor on older ones */
        return st;
    }
    memcpy(m->stage[index], data, count * 4);
    m->input_set[index] = 1;
    return ADRENO_OK;
}

adreno_status adreno_set_input(adreno_model *m, int index, const float *data, size_t count) {
    return set_input(m, "adreno_set_input", index, ADRENO_DTYPE_F32, data, count);
}

adreno_status adreno_set_input_i32(adreno_model *m, int index, const int32_t *data, size_t count) {
    return set_input(m, "adreno_set_input_i32", index, ADRENO_DTYPE_I32, data, count);
}

/* adreno_run and adreno_profile read the inputs given with adreno_set_input. */
static adreno_status check_inputs_set(adreno_model *m, const char *fn) {
    for (int i = 0; i < m->num_inputs; i++)
        if (!m->input_set[i])
            return fail(m, ADRENO_ERR_ARGUMENT,
                        "%s: input %d ('%s') has not been given with adreno_set_input (since the model was opened, or "
                        "since adreno_run_io, which takes its inputs directly)",
                        fn, i, m->inputs[i].name);
    return ADRENO_OK;
}

adreno_status adreno_get_output(adreno_model *m, int index, float *data, size_t count) {
    if (!check_model(m)) return ADRENO_ERR_ARGUMENT;
    if (index < 0 || index >= m->num_outputs)
        return fail(m, ADRENO_ERR_ARGUMENT, "adreno_get_output: no output %d (the model has %d)", index,
                    m->num_outputs);
    if (!data || count != (size_t)m->outputs[index].count)
        return fail(m, ADRENO_ERR_ARGUMENT, "adreno_get_output: output %d ('%s') has %lld floats, got room for %zu%s",
                    index, m->outputs[index].name, (long long)m->outputs[index].count, count,
                    data ? "" : " (NULL data)");
    if (!m->outputs_valid)
        return fail(m, ADRENO_ERR_ARGUMENT,
                    "adreno_get_output: no outputs to get: call adreno_run first (adreno_run_io returns its outputs "
                    "directly)");
    memcpy(data, m->stage[m->num_inputs + index], count * 4);
    return ADRENO_OK;
}

static adreno_status enqueue_launches(adreno_model *m, cl_command_queue q, cl_event *events) {
    for (int i = 0; i < m->num_launches; i++) {
        const launch_desc *l = &m->launches[i];
        cl_int e = clEnqueueNDRangeKernel(q, m->kernels[i], l->dims, NULL, l->global, l->has_local ? l->local : NULL,
                                          0, NULL, events ? &events[i] : NULL);
        if (e != CL_SUCCESS) {
            if (events)
                for (int k = 0; k < i; k++) clReleaseEvent(events[k]);
            clFinish(q);
            return fail(m, ADRENO_ERR_OPENCL, "enqueueing launch %d (kernel '%s') failed: %s (%d)", i, l->kernel,
                        cl_error_name(e), (int)e);
        }
    }
    return ADRENO_OK;
}

static adreno_status execute(adreno_model *m, const void *const *inputs, float *const *outputs, int launch) {
    cl_int e;
    adreno_status st;
    for (int i = 0; i < m->num_inputs; i++) {
        const tensor_desc *t = &m->inputs[i];
        const void *src = inputs ? inputs[i] : m->stage[i];
        if (inputs && m->pinned[i]) {
            memcpy(m->stage[i], inputs[i], (size_t)t->count * 4);
            src = m->stage[i];
        }
        e = clEnqueueWriteBuffer(m->queue, m->alloc_mem[t->allocation], CL_FALSE, 0, (size_t)t->count * 4, src, 0,
                                 NULL, NULL);
        if (e != CL_SUCCESS) {
            clFinish(m->queue);
            return fail(m, ADRENO_ERR_OPENCL, "writing input '%s' failed: %s (%d)", t->name, cl_error_name(e), (int)e);
        }
    }
    if (launch && (st = enqueue_launches(m, m->queue, NULL))) return st;
    for (int i = 0; i < m->num_outputs; i++) {
        const tensor_desc *t = &m->outputs[i];
        void *dst = outputs && !m->pinned[m->num_inputs + i] ? (void *)outputs[i] : m->stage[m->num_inputs + i];
        if (t->constant) {
            memcpy(dst, t->constant, (size_t)t->count * 4);
            continue;
        }
        e = clEnqueueReadBuffer(m->queue, m->alloc_mem[t->allocation], CL_FALSE, 0, (size_t)t->count * 4, dst, 0,
                                NULL, NULL);
        if (e != CL_SUCCESS) {
            clFinish(m->queue);
            return fail(m, ADRENO_ERR_OPENCL, "reading output '%s' failed: %s (%d)", t->name, cl_error_name(e), (int)e);
        }
    }
    if ((e = clFinish(m->queue)) != CL_SUCCESS) return cl_fail(m, e, "clFinish after the launches");
    if (outputs)
        for (int i = 0; i < m->num_outputs; i++)
            if (m->pinned[m->num_inputs + i])
                memcpy(outputs[i], m->stage[m->num_inputs + i], (size_t)m->outputs[i].count * 4);
    return ADRENO_OK;
}

adreno_status adreno_run(adreno_model *m) {
    if (!check_model(m)) return ADRENO_ERR_ARGUMENT;
    adreno_status st = check_inputs_set(m, "adreno_run");
    if (st) return st;
    m->outputs_valid = 0;
    st = execute(m, NULL, NULL, 1);
    m->outputs_valid = st == ADRENO_OK;
    return st;
}

/* adreno_run_io and adreno_transfer move data between the caller's arrays and the device
 * (through the staging buffers in pinned mode): afterwards neither the inputs given with
 * adreno_set_input nor the outputs of the last adreno_run are held any more, in every I/O
 * mode alike. */
static void forget_staged(adreno_model *m) {
    memset(m->input_set, 0, (size_t)m->num_inputs);
    m->outputs_valid = 0;
}

/* The arrays of a run from the caller's memory: none NULL; with `typed` (adreno_run_typed,
 * adreno_transfer_typed) every i32 input's ids in range, else (the float entry points) no
 * i32 input at all. Checked before anything is uploaded or forgotten. */
static adreno_status check_io(adreno_model *m, const char *fn, const void *const *inputs, float *const *outputs,
                              int typed, int launch) {
    if (!inputs || !outputs) return fail(m, ADRENO_ERR_ARGUMENT, "%s: NULL inputs or outputs", fn);
    for (int i = 0; i < m->num_inputs; i++)
        if (!inputs[i]) return fail(m, ADRENO_ERR_ARGUMENT, "%s: input %d is NULL", fn, i);
    for (int i = 0; i < m->num_outputs; i++)
        if (!outputs[i]) return fail(m, ADRENO_ERR_ARGUMENT, "%s: output %d is NULL", fn, i);
    for (int i = 0; i < m->num_inputs; i++) {
        if (m->inputs[i].dtype != ADRENO_DTYPE_I32) continue;
        if (!typed)
            return fail(m, ADRENO_ERR_ARGUMENT,
                        "%s: input %d ('%s') is i32 (token ids) and %s takes float inputs only; use %s, whose "
                        "input pointers each point to their input's own type",
                        fn, i, m->inputs[i].name, fn, launch ? "adreno_run_typed" : "adreno_transfer_typed");
        adreno_status st = check_ids(m, fn, i, (const int32_t *)inputs[i]);
        if (st) return st;
    }
    return ADRENO_OK;
}

static adreno_status run_from(adreno_model *m, const char *fn, const void *const *inputs, float *const *outputs,
                              int typed, int launch) {
    if (!check_model(m)) return ADRENO_ERR_ARGUMENT;
    adreno_status st = check_io(m, fn, inputs, outputs, typed, launch);
    if (st) return st;
    forget_staged(m);
    return execute(m, inputs, outputs, launch);
}

adreno_status adreno_run_io(adreno_model *m, const float *const *inputs, float *const *outputs) {
    return run_from(m, "adreno_run_io", (const void *const *)inputs, outputs, 0, 1);
}

adreno_status adreno_run_typed(adreno_model *m, const void *const *inputs, float *const *outputs) {
    return run_from(m, "adreno_run_typed", inputs, outputs, 1, 1);
}

adreno_status adreno_transfer(adreno_model *m, const float *const *inputs, float *const *outputs) {
    return run_from(m, "adreno_transfer", (const void *const *)inputs, outputs, 0, 0);
}

adreno_status adreno_transfer_typed(adreno_model *m, const void *const *inputs, float *const *outputs) {
    return run_from(m, "adreno_transfer_typed", inputs, outputs, 1, 0);
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

adreno_status adreno_measure_launches(adreno_model *m, int n, double *issue_ms, double *total_ms) {
    if (!check_model(m)) return ADRENO_ERR_ARGUMENT;
    if (n < 1 || !issue_ms || !total_ms)
        return fail(m, ADRENO_ERR_ARGUMENT, "adreno_measure_launches: n must be >= 1 and the outputs not NULL");
    cl_int e;
    if ((e = clFinish(m->queue)) != CL_SUCCESS) return cl_fail(m, e, "clFinish");
    double start = now_ms();
    for (int i = 0; i < n; i++) {
        adreno_status st = enqueue_launches(m, m->queue, NULL);
        if (st) return st;
    }
    double issued = now_ms();
    if ((e = clFinish(m->queue)) != CL_SUCCESS) return cl_fail(m, e, "clFinish after the launches");
    double done = now_ms();
    *issue_ms = (issued - start) / n;
    *total_ms = (done - start) / n;
    return ADRENO_OK;
}

static double median_of(double *values, int n) {
    qsort(values, (size_t)n, sizeof *values, compare_double);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

adreno_status adreno_profile(adreno_model *m, int repeat, double *launch_ms, double *span_ms) {
    if (!check_model(m)) return ADRENO_ERR_ARGUMENT;
    if (repeat < 1 || repeat > 100000 || !launch_ms)
        return fail(m, ADRENO_ERR_ARGUMENT, "adreno_profile: repeat must be 1..100000 and launch_ms not NULL");
    adreno_status checked = check_inputs_set(m, "adreno_profile");
    if (checked) return checked;
    cl_int e;
    if (!m->profiling_queue) {
        m->profiling_queue = clCreateCommandQueue(m->context, m->device, CL_QUEUE_PROFILING_ENABLE, &e);
        if (!m->profiling_queue) return cl_fail(m, e, "clCreateCommandQueue(CL_QUEUE_PROFILING_ENABLE)");
    }
    size_t n = (size_t)m->num_launches;
    if (n == 0) {
        if (span_ms) *span_ms = 0.0;
        return ADRENO_OK;
    }
    cl_event *events = (cl_event *)calloc(n, sizeof *events);
    double *times = (double *)calloc(n * (size_t)repeat, sizeof *times);
    double *spans = (double *)calloc((size_t)repeat, sizeof *spans);
    if (!events || !times || !spans) {
        free(events);
        free(times);
        free(spans);
        return fail(m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    adreno_status st = ADRENO_OK;
    for (int i = 0; i < m->num_inputs && st == ADRENO_OK; i++) {
        const tensor_desc *t = &m->inputs[i];
        e = clEnqueueWriteBuffer(m->profiling_queue, m->alloc_mem[t->allocation], CL_TRUE, 0, (size_t)t->count * 4,
                                 m->stage[i], 0, NULL, NULL);
        if (e != CL_SUCCESS) st = cl_fail(m, e, "writing an input for profiling");
    }
    for (int r = 0; r < repeat && st == ADRENO_OK; r++) {
        if ((st = enqueue_launches(m, m->profiling_queue, events))) break;
        if ((e = clFinish(m->profiling_queue)) != CL_SUCCESS) st = cl_fail(m, e, "clFinish while profiling");
        cl_ulong first = 0, last = 0;
        for (size_t i = 0; i < n; i++) {
            cl_ulong t0 = 0, t1 = 0;
            if (st == ADRENO_OK &&
                ((e = clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL)) != CL_SUCCESS ||
                 (e = clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL)) != CL_SUCCESS))
                st = cl_fail(m, e, "clGetEventProfilingInfo");
            times[i * (size_t)repeat + (size_t)r] = t1 > t0 ? (double)(t1 - t0) * 1e-6 : 0.0;
            if (i == 0) first = t0;
            last = t1;
            clReleaseEvent(events[i]);
        }
        spans[r] = last > first ? (double)(last - first) * 1e-6 : 0.0;
    }
    if (st == ADRENO_OK) {
        for (size_t i = 0; i < n; i++) launch_ms[i] = median_of(&times[i * (size_t)repeat], repeat);
        if (span_ms) *span_ms = median_of(spans, repeat);
    }
    free(events);
    free(times);
    free(spans);
    return st;
}

/* ------------------------------------------------------------------ introspection */

int adreno_num_inputs(const adreno_model *m) { return m ? m->num_inputs : 0; }
int adreno_num_outputs(const adreno_model *m) { return m ? m->num_outputs : 0; }
int adreno_num_launches(const adreno_model *m) { return m ? m->num_launches : 0; }

static const tensor_desc *tensor(const adreno_model *m, int output, int index) {
    if (!m) return NULL;
    if (output) return index >= 0 && index < m->num_outputs ? &m->outputs[index] : NULL;
    return index >= 0 && index < m->num_inputs ? &m->inputs[index] : NULL;
}

const char *adreno_input_name(const adreno_model *m, int i) { return tensor(m, 0, i) ? tensor(m, 0, i)->name : NULL; }
const char *adreno_output_name(const adreno_model *m, int i) { return tensor(m, 1, i) ? tensor(m, 1, i)->name : NULL; }
int adreno_input_rank(const adreno_model *m, int i) { return tensor(m, 0, i) ? tensor(m, 0, i)->rank : -1; }
int adreno_output_rank(const adreno_model *m, int i) { return tensor(m, 1, i) ? tensor(m, 1, i)->rank : -1; }
const int64_t *adreno_input_shape(const adreno_model *m, int i) {
    return tensor(m, 0, i) ? tensor(m, 0, i)->shape : NULL;
}
const int64_t *adreno_output_shape(const adreno_model *m, int i) {
    return tensor(m, 1, i) ? tensor(m, 1, i)->shape : NULL;
}
size_t adreno_input_count(const adreno_model *m, int i) {
    return tensor(m, 0, i) ? (size_t)tensor(m, 0, i)->count : 0;
}
size_t adreno_output_count(const adreno_model *m, int i) {
    return tensor(m, 1, i) ? (size_t)tensor(m, 1, i)->count : 0;
}
adreno_dtype adreno_input_dtype(const adreno_model *m, int i) {
    return tensor(m, 0, i) ? tensor(m, 0, i)->dtype : ADRENO_DTYPE_INVALID;
}
const char *adreno_dtype_name(adreno_dtype dtype) {
    return dtype == ADRENO_DTYPE_F32 ? "f32" : dtype == ADRENO_DTYPE_I32 ? "i32" : NULL;
}
int64_t adreno_input_bound(const adreno_model *m, int i) {
    return tensor(m, 0, i) && tensor(m, 0, i)->dtype == ADRENO_DTYPE_I32 ? tensor(m, 0, i)->bound : 0;
}
const char *adreno_launch_kernel(const adreno_model *m, int i) {
    return m && i >= 0 && i < m->num_launches ? m->launches[i].kernel : NULL;
}
const char *adreno_launch_node(const adreno_model *m, int i) {
    return m && i >= 0 && i < m->num_launches && m->launches[i].node ? m->launches[i].node : "";
}
const char *adreno_device_name(const adreno_model *m) { return m ? m->device_name : ""; }
const char *adreno_program_origin(const adreno_model *m) { return m && m->origin ? m->origin : ""; }
const char *adreno_io_mode_name(const adreno_model *m) {
    if (!m || !m->num_pinned) return "direct";
    int staged = m->num_inputs + m->num_outputs; /* constant outputs are never staged */
    for (int i = 0; i < m->num_outputs; i++) staged -= m->outputs[i].constant_offset >= 0;
    return m->num_pinned == staged ? "pinned" : "mixed";
}
const char *adreno_version(void) { return ADRENO_RT_VERSION; }

/* ------------------------------------------------------------------ state */

int adreno_num_states(const adreno_model *m) { return m ? m->num_states : 0; }
const char *adreno_state_name(const adreno_model *m, int i) {
    return m && i >= 0 && i < m->num_states ? m->states[i].input : NULL;
}
int64_t adreno_state_bytes(const adreno_model *m, int i) {
    return m && i >= 0 && i < m->num_states ? m->states[i].bytes : 0;
}

adreno_status adreno_reset_states(adreno_model *m) {
    if (!check_model(m)) return ADRENO_ERR_ARGUMENT;
    return zero_states(m);
}

/* ------------------------------------------------------------------ decoders */

enum { PREFILL = 0, DECODE = 1 };
static const char *const program_names[2] = {"prefill", "decode"};

struct adreno_decoder {
    char error[4096];
    adreno_model *model[2];     /* prefill (owns the weights and the state), decode (borrows them) */
    char *input_ids, *position_name, *logits_name;
    int ids_input[2], position_input[2], logits_output[2];
    int64_t tokens[2];          /* token ids a run: prefill_chunk, 1 */
    int64_t vocab, max_context, max_positions;
    int32_t *eos;
    int num_eos;
    int64_t position;           /* tokens in the cache */
    int32_t *ids;               /* prefill_chunk ids of a run */
    float **outputs[2];         /* room for each program's outputs */
    float *logits;              /* vocab: the logits generate chooses from */
    int32_t *order;             /* vocab: indices, for top-k sampling */
};

static adreno_status dfail(adreno_decoder *d, adreno_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->error, sizeof d->error, fmt, ap);
    va_end(ap);
    return status;
}

/* The error of one of the decoder's models, as the decoder's. */
static adreno_status from_model(adreno_decoder *d, const adreno_model *m, adreno_status st) {
    if (st != ADRENO_OK) snprintf(d->error, sizeof d->error, "%s", m->error);
    return st;
}

void adreno_decoder_close(adreno_decoder *d) {
    if (!d) return;
    for (int k = 0; k < 2; k++) {
        if (d->outputs[k])
            for (int i = 0; d->model[k] && i < d->model[k]->num_outputs; i++) free(d->outputs[k][i]);
        free(d->outputs[k]);
    }
    adreno_close(d->model[DECODE]); /* the borrower first: its buffers are the prefill program's */
    adreno_close(d->model[PREFILL]);
    free(d->input_ids);
    free(d->position_name);
    free(d->logits_name);
    free(d->eos);
    free(d->ids);
    free(d->logits);
    free(d->order);
    free(d);
}

/* Which of the program's tensors the loop feeds and reads, checked against the decoder's
 * facts: fed exactly the token ids ([1, tokens] i32) and the position ([1] i32), computing the
 * logits ([1, tokens, vocab]) and keeping every state of the decoder. */
static adreno_status check_program(adreno_decoder *d, reader *r, int k, const json_value *states) {
    adreno_model *m = d->model[k];
    int64_t tokens = d->tokens[k];
    int ids = find_input(m, d->input_ids), pos = find_input(m, d->position_name), logits = -1;
    for (int i = 0; i < m->num_outputs; i++)
        if (strcmp(m->outputs[i].name, d->logits_name) == 0) logits = i;
    if (ids < 0 || pos < 0 || m->num_inputs != 2)
        return bad(r, "inputs", "a decoder program is fed exactly '%s' and '%s' (it has %d fed inputs)", d->input_ids,
                   d->position_name, m->num_inputs);
    const tensor_desc *t = &m->inputs[ids];
    if (t->dtype != ADRENO_DTYPE_I32 || t->count != tokens || t->rank != 2 || t->shape[0] != 1)
        return bad(r, "inputs", "'%s' must be i32 token ids of shape [1, %lld]", d->input_ids, (long long)tokens);
    t = &m->inputs[pos];
    if (t->dtype != ADRENO_DTYPE_I32 || t->count != 1)
        return bad(r, "inputs", "'%s' must be one i32 value", d->position_name);
    if (logits < 0 || m->outputs[logits].constant_offset >= 0 || m->outputs[logits].count != tokens * d->vocab)
        return bad(r, "outputs", "'%s' must be computed, %lld x %lld values", d->logits_name, (long long)tokens,
                   (long long)d->vocab);
    if ((int64_t)states->length != (int64_t)m->num_states)
        return bad(r, "state", "%d entries; the decoder keeps %zu", m->num_states, states->length);
    for (size_t i = 0; i < states->length; i++) {
        const json_value *s = &states->items[i];
        const char *name = opt_string(s, "input");
        const json_value *bytes = json_get(s, "bytes");
        int j = find_state(m, name);
        if (j < 0) return bad(r, "state", "the decoder's state '%s' is not state of this program", name);
        if (bytes && bytes->type == JSON_NUMBER && bytes->is_integer && bytes->integer != m->states[j].bytes)
            return bad(r, "state", "'%s' is %lld bytes; the decoder says %lld", name, (long long)m->states[j].bytes,
                       (long long)bytes->integer);
    }
    d->ids_input[k] = ids;
    d->position_input[k] = pos;
    d->logits_output[k] = logits;
    return ADRENO_OK;
}

/* The decoder's facts: names, vocabulary, context, chunk, end-of-sequence ids. */
static adreno_status read_decoder_facts(adreno_decoder *d, reader *r, const json_value *facts) {
    adreno_status st;
    int64_t v;
    const json_value *eos, *states;
    if (facts->type != JSON_OBJECT) return bad(r, "the top level", "'decoder' must be an object");
    if ((st = need_string(r, facts, "input_ids", "decoder", &d->input_ids))) return st;
    if ((st = need_string(r, facts, "logits", "decoder", &d->logits_name))) return st;
    if (json_get(facts, "position")) {
        if ((st = need_string(r, facts, "position", "decoder", &d->position_name))) return st;
    } else if (!(d->position_name = dup_string("position"))) {
        return fail(r->m, ADRENO_ERR_MEMORY, "out of host memory");
    }
    if ((st = need_int(r, facts, "vocab", "decoder", 1, INT32_MAX, &d->vocab))) return st;
    if ((st = need_int(r, facts, "max_context", "decoder", 1, (int64_t)1 << 24, &d->max_context))) return st;
    if ((st = need_int(r, facts, "prefill_chunk", "decoder", 1, d->max_context, &v))) return st;
    d->tokens[PREFILL] = v;
    d->tokens[DECODE] = 1;
    if ((st = need_int(r, facts, "max_positions", "decoder", 1, INT32_MAX, &d->max_positions))) return st;
    if ((st = need(r, facts, "state", JSON_ARRAY, "decoder", &states))) return st;
    eos = json_get(facts, "eos_token_ids");
    if (eos && eos->type != JSON_ARRAY) return bad(r, "decoder", "'eos_token_ids' must be an array");
    if (eos && eos->length) {
        if (eos->length > 4096) return bad(r, "decoder", "more than 4096 eos_token_ids");
        d->eos = (int32_t *)calloc(eos->length, sizeof *d->eos);
        if (!d->eos) return fail(r->m, ADRENO_ERR_MEMORY, "out of host memory");
        for (size_t i = 0; i < eos->length; i++) {
            const json_value *e = &eos->items[i];
            if (e->type != JSON_NUMBER || !e->is_integer || e->integer < INT32_MIN || e->integer > INT32_MAX)
                return bad(r, "decoder", "eos_token_ids[%zu] must be an int32", i);
            d->eos[i] = (int32_t)e->integer;
        }
        d->num_eos = (int)eos->length;
    }
    return ADRENO_OK;
}

static adreno_status decoder_load(adreno_decoder *d, const char *path, const adreno_options *o) {
    char file[4200];
    blob manifest = {0}, source[2] = {{0}, {0}}, weights = {0};
    json_doc *doc = NULL;
    const json_value *root = NULL, *programs, *facts, *files, *states;
    struct stat info;
    adreno_status st = ADRENO_OK;
    for (int k = 0; k < 2; k++)
        if (!(d->model[k] = (adreno_model *)calloc(1, sizeof *d->model[k])))
            return dfail(d, ADRENO_ERR_MEMORY, "out of host memory");
    adreno_model *m0 = d->model[PREFILL], *m1 = d->model[DECODE];
    snprintf(file, sizeof file, "%s/manifest.json", path);
    reader r = {m0, file, NULL};
    if (stat(path, &info) != 0) return dfail(d, ADRENO_ERR_IO, "no artifact at %s (%s)", path, strerror(errno));
    if (!S_ISDIR(info.st_mode))
        return dfail(d, ADRENO_ERR_IO,
                     "%s is not an adreno-mlir artifact: artifacts are directories (X.adreno/ with manifest.json); a "
                     "decoder artifact is written by adreno_mlir.compile_decoder(...).save(PATH)",
                     path);
    if ((st = read_file(m0, path, "manifest.json", -1, &manifest))) {
        if (st == ADRENO_ERR_IO && strstr(m0->error, "is missing"))
            fail(m0, ADRENO_ERR_IO, "%s is not an adreno-mlir artifact: %s is missing", path, file);
        goto done;
    }
    {
        char why[512];
        doc = json_parse(manifest.data, manifest.size, &root, why, sizeof why);
        if (!doc) {
            st = strcmp(why, "out of memory") == 0 ? fail(m0, ADRENO_ERR_MEMORY, "out of host memory reading %s", file)
                                                    : fail(m0, ADRENO_ERR_FORMAT, "%s is not valid JSON: %s", file, why);
            goto done;
        }
    }
    if ((st = read_format(&r, root))) goto done;
    programs = json_get(root, "programs");
    facts = json_get(root, "decoder");
    if (!programs && !facts) {
        st = fail(m0, ADRENO_ERR_ARGUMENT,
                  "%s is not a decoder artifact: it holds one model (its manifest has no 'decoder' and 'programs'); "
                  "run it without --generate (adreno-run %s, or adreno_open in C). A decoder artifact, a prefill and a "
                  "decode program sharing a KV cache, is written by adreno_mlir.compile_decoder(...).save(PATH)",
                  path, path);
        goto done;
    }
    if (m0->format_version < 5) {
        st = bad(&r, "the top level", "a decoder artifact needs format version 5 (this manifest says %d)",
                 m0->format_version);
        goto done;
    }
    if (!programs || programs->type != JSON_OBJECT || !facts) {
        st = bad(&r, "the top level", "a decoder artifact has a 'decoder' object and a 'programs' object");
        goto done;
    }
    if ((st = read_decoder_facts(d, &r, facts))) goto done;
    states = json_get(facts, "state");
    m1->format_version = m0->format_version;
    for (int k = 0; k < 2; k++) {
        char scope[32];
        snprintf(scope, sizeof scope, "programs.%s.", program_names[k]);
        reader rk = {d->model[k], file, scope};
        const json_value *prog = json_get(programs, program_names[k]);
        if (!prog || prog->type != JSON_OBJECT) {
            st = bad(&r, "programs", "'%s' must be an object", program_names[k]);
            goto done;
        }
        if ((st = read_program(&rk, prog)) || (st = check_program(d, &rk, k, states))) {
            from_model(d, d->model[k], st);
            goto free_files;
        }
    }
    if (strcmp(m0->weights_file, m1->weights_file) != 0) {
        st = bad(&r, "programs", "both programs read one weights file (they name %s and %s)", m0->weights_file,
                 m1->weights_file);
        goto done;
    }
    files = json_get(root, "files");
    if (!files || files->type != JSON_OBJECT) {
        st = bad(&r, "the top level", "'files' must map file names to {sha256, bytes}");
        goto done;
    }
    if ((st = read_checked(m0, path, files, m0->weights_file, o->verify_checksums, &weights))) goto done;
    for (int k = 0; k < 2; k++)
        if ((st = read_checked(d->model[k], path, files, d->model[k]->source_file, o->verify_checksums, &source[k]))) {
            from_model(d, d->model[k], st);
            goto free_files;
        }
    if ((st = instantiate(m0, o, path, files, source[0].data, source[0].size, weights.data, weights.size))) goto done;
    {
        /* the decode program on the prefill program's context, borrowing its weights and state */
        adreno_options o1 = *o;
        o1.context = m0->context;
        o1.device = m0->device;
        o1.program = NULL;
        m1->share = m0;
        st = instantiate(m1, &o1, path, files, source[1].data, source[1].size, weights.data, weights.size);
        m1->share = NULL;
        if (st) {
            from_model(d, m1, st);
            goto free_files;
        }
    }
    d->ids = (int32_t *)calloc((size_t)d->tokens[PREFILL], sizeof *d->ids);
    d->logits = (float *)calloc((size_t)d->vocab, sizeof *d->logits);
    d->order = (int32_t *)calloc((size_t)d->vocab, sizeof *d->order);
    if (!d->ids || !d->logits || !d->order) {
        st = fail(m0, ADRENO_ERR_MEMORY, "out of host memory");
        goto done;
    }
    for (int k = 0; k < 2; k++) {
        adreno_model *m = d->model[k];
        d->outputs[k] = (float **)calloc((size_t)m->num_outputs, sizeof *d->outputs[k]);
        if (!d->outputs[k]) {
            st = fail(m0, ADRENO_ERR_MEMORY, "out of host memory");
            goto done;
        }
        for (int i = 0; i < m->num_outputs; i++)
            if (!(d->outputs[k][i] = (float *)malloc((size_t)m->outputs[i].count * 4))) {
                st = fail(m0, ADRENO_ERR_MEMORY, "out of host memory (the %s program's outputs)", program_names[k]);
                goto done;
            }
    }
done:
    from_model(d, m0, st);
free_files:
    json_free(doc);
    free(manifest.data);
    free(source[0].data);
    free(source[1].data);
    free(weights.data);
    return st;
}

adreno_status adreno_decoder_open(const char *path, const adreno_options *options, adreno_decoder **out, char *error,
                                  size_t error_size) {
    if (error && error_size) error[0] = '\0';
    if (!out) {
        if (error && error_size) snprintf(error, error_size, "adreno_decoder_open: the decoder pointer is NULL");
        return ADRENO_ERR_ARGUMENT;
    }
    *out = NULL;
    adreno_decoder *d = (adreno_decoder *)calloc(1, sizeof *d);
    if (!d) {
        if (error && error_size) snprintf(error, error_size, "out of host memory");
        return ADRENO_ERR_MEMORY;
    }
    adreno_options defaults;
    if (!options) {
        adreno_options_init(&defaults);
        options = &defaults;
    }
    adreno_status st = path ? decoder_load(d, path, options)
                            : dfail(d, ADRENO_ERR_ARGUMENT, "adreno_decoder_open: the path is NULL");
    if (st != ADRENO_OK) {
        if (error && error_size) snprintf(error, error_size, "%s", d->error);
        adreno_decoder_close(d);
        return st;
    }
    *out = d;
    return ADRENO_OK;
}

const char *adreno_decoder_error(const adreno_decoder *d) { return d ? d->error : "no decoder (adreno_decoder_open failed)"; }
const adreno_model *adreno_decoder_model(const adreno_decoder *d, int which) {
    return d && (which == PREFILL || which == DECODE) ? d->model[which] : NULL;
}
int64_t adreno_decoder_vocab(const adreno_decoder *d) { return d ? d->vocab : 0; }
int64_t adreno_decoder_max_context(const adreno_decoder *d) { return d ? d->max_context : 0; }
int64_t adreno_decoder_prefill_chunk(const adreno_decoder *d) { return d ? d->tokens[PREFILL] : 0; }
int64_t adreno_decoder_max_positions(const adreno_decoder *d) { return d ? d->max_positions : 0; }
int64_t adreno_decoder_position(const adreno_decoder *d) { return d ? d->position : 0; }
int adreno_decoder_num_eos(const adreno_decoder *d) { return d ? d->num_eos : 0; }
const int32_t *adreno_decoder_eos(const adreno_decoder *d) { return d ? d->eos : NULL; }

adreno_status adreno_decoder_reset(adreno_decoder *d) {
    if (!d) return ADRENO_ERR_ARGUMENT;
    d->position = 0;
    return from_model(d, d->model[PREFILL], zero_states(d->model[PREFILL])); /* the decode program's are these */
}

/* Every id in [0, vocab), else ADRENO_ERR_INPUT naming up to five that are not. */
static adreno_status check_vocab(adreno_decoder *d, const char *what, const int32_t *ids, size_t n) {
    char list[160] = "";
    size_t used = 0, bad_ids = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= 0 && ids[i] < d->vocab) continue;
        if (bad_ids++ < 5 && used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%ld", used ? ", " : "", (long)ids[i]);
    }
    if (!bad_ids) return ADRENO_OK;
    return dfail(d, ADRENO_ERR_INPUT, "%s has ids [%s%s] outside the vocabulary [0, %lld)", what, list,
                 bad_ids > 5 ? ", ..." : "", (long long)d->vocab);
}

/* One run of program k on d->ids (its token count) at the current position; the logits of
 * token `row` of the run into d->logits. */
static adreno_status run_program(adreno_decoder *d, int k, const int32_t *ids, int64_t row) {
    adreno_model *m = d->model[k];
    int32_t position = (int32_t)d->position;
    const void *inputs[2];
    inputs[d->ids_input[k]] = ids;
    inputs[d->position_input[k]] = &position;
    adreno_status st = adreno_run_typed(m, inputs, d->outputs[k]);
    if (st)
        return dfail(d, st, "the %s program at position %lld: %s", program_names[k], (long long)d->position,
                     m->error);
    memcpy(d->logits, d->outputs[k][d->logits_output[k]] + row * d->vocab, (size_t)d->vocab * sizeof *d->logits);
    return ADRENO_OK;
}

/* The loop of adreno_mlir/generation.py (GenerationLoop.feed): chunks of prefill_chunk
 * tokens while more than one token is left and a whole chunk fits the cache (a short last
 * chunk padded by repeating its last token; the logits of its last real token), then the
 * decode program one token at a time. */
static adreno_status feed(adreno_decoder *d, const int32_t *ids, size_t n) {
    int64_t c = d->tokens[PREFILL];
    size_t i = 0;
    while (i < n) {
        size_t rest = n - i, take;
        adreno_status st;
        if (rest > 1 && d->position + c <= d->max_context) {
            take = rest < (size_t)c ? rest : (size_t)c;
            for (int64_t j = 0; j < c; j++) d->ids[j] = ids[i + ((size_t)j < take ? (size_t)j : take - 1)];
            st = run_program(d, PREFILL, d->ids, (int64_t)take - 1);
        } else {
            take = 1;
            st = run_program(d, DECODE, &ids[i], 0);
        }
        if (st) return st;
        d->position += (int64_t)take;
        i += take;
    }
    return ADRENO_OK;
}

adreno_status adreno_decoder_feed(adreno_decoder *d, const int32_t *ids, size_t count, float *logits) {
    if (!d) return ADRENO_ERR_ARGUMENT;
    if (!ids || count == 0) return dfail(d, ADRENO_ERR_ARGUMENT, "the prompt is empty: give at least one token id");
    adreno_status st = check_vocab(d, "the prompt", ids, count);
    if (st) return st;
    if ((uint64_t)count > (uint64_t)(d->max_context - d->position))
        return dfail(d, ADRENO_ERR_INPUT,
                     "%zu tokens after %lld do not fit the context of %lld tokens; compile the decoder with a larger "
                     "max_context (the model's rotary tables allow %lld)",
                     count, (long long)d->position, (long long)d->max_context, (long long)d->max_positions);
    if ((st = feed(d, ids, count))) return st;
    if (logits) memcpy(logits, d->logits, (size_t)d->vocab * sizeof *logits);
    return ADRENO_OK;
}

adreno_status adreno_decoder_step(adreno_decoder *d, int32_t token, float *logits) {
    if (!d) return ADRENO_ERR_ARGUMENT;
    if (d->position >= d->max_context)
        return dfail(d, ADRENO_ERR_INPUT, "the cache is full (%lld tokens): adreno_decoder_reset, or compile the "
                     "decoder with a larger max_context", (long long)d->max_context);
    adreno_status st = check_vocab(d, "the token", &token, 1);
    if (st || (st = run_program(d, DECODE, &token, 0))) return st;
    d->position++;
    if (logits) memcpy(logits, d->logits, (size_t)d->vocab * sizeof *logits);
    return ADRENO_OK;
}

void adreno_generate_options_init(adreno_generate_options *o) {
    memset(o, 0, sizeof *o);
    o->max_new_tokens = 32;
    o->greedy = 1;
    o->temperature = 1.0f;
    o->top_k = 0;
    o->seed = 0;
    o->stop_at_eos = 1;
}

/* The sampler's generator: splitmix64 (as adreno-run's random inputs), a double in [0, 1). */
static double next_uniform(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* order[0 .. k) := the indices of the k largest of x[order[0 .. n)] (quickselect, in place). */
static void select_largest(const float *x, int32_t *order, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = x[order[lo + (hi - lo) / 2]];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (x[order[i]] > pivot) i++;
            while (x[order[j]] < pivot) j--;
            if (i <= j) {
                int32_t t = order[i];
                order[i] = order[j];
                order[j] = t;
                i++;
                j--;
            }
        }
        if (k - 1 <= j) hi = j;
        else if (k - 1 >= i) lo = i;
        else break;
    }
}

/* A token of d->logits: argmax (the first largest, as numpy's), or a draw from
 * softmax(logits / temperature) over the top_k largest (0: all). */
static int32_t choose(adreno_decoder *d, const adreno_generate_options *o, uint64_t *rng) {
    const float *x = d->logits;
    int64_t v = d->vocab;
    if (o->greedy) {
        int64_t best = 0;
        for (int64_t i = 1; i < v && x[best] == x[best]; i++) /* a NaN wins, as in numpy's argmax */
            if (x[i] > x[best] || x[i] != x[i]) best = i;
        return (int32_t)best;
    }
    int64_t k = o->top_k > 0 && o->top_k < v ? o->top_k : v;
    for (int64_t i = 0; i < v; i++) d->order[i] = (int32_t)i;
    if (k < v) select_largest(x, d->order, v, k);
    double top = -HUGE_VAL, total = 0;
    for (int64_t i = 0; i < k; i++)
        if ((double)x[d->order[i]] > top) top = (double)x[d->order[i]];
    for (int64_t i = 0; i < k; i++) total += exp(((double)x[d->order[i]] - top) / o->temperature);
    double u = next_uniform(rng) * total, sum = 0;
    for (int64_t i = 0; i < k; i++) {
        sum += exp(((double)x[d->order[i]] - top) / o->temperature);
        if (u < sum) return d->order[i];
    }
    return d->order[k - 1];
}

adreno_status adreno_decoder_generate(adreno_decoder *d, const int32_t *prompt, size_t prompt_len,
                                      const adreno_generate_options *options, int32_t *tokens, float *logits,
                                      adreno_generation *result) {
    if (!d) return ADRENO_ERR_ARGUMENT;
    adreno_generate_options defaults;
    if (!options) {
        adreno_generate_options_init(&defaults);
        options = &defaults;
    }
    if (!tokens || !result) return dfail(d, ADRENO_ERR_ARGUMENT, "adreno_decoder_generate: tokens or result is NULL");
    if (options->max_new_tokens < 1)
        return dfail(d, ADRENO_ERR_ARGUMENT, "max_new_tokens must be at least 1, got %d", options->max_new_tokens);
    if (!options->greedy && !(options->temperature > 0 && options->temperature <= FLT_MAX))
        return dfail(d, ADRENO_ERR_ARGUMENT, "the temperature must be positive, got %g", (double)options->temperature);
    if (options->top_k < 0) return dfail(d, ADRENO_ERR_ARGUMENT, "top_k must be >= 0, got %d", options->top_k);
    if (!prompt || prompt_len == 0)
        return dfail(d, ADRENO_ERR_ARGUMENT, "the prompt is empty: give at least one token id");
    adreno_status st = check_vocab(d, "the prompt", prompt, prompt_len);
    if (st) return st;
    if ((uint64_t)prompt_len > (uint64_t)d->max_context)
        return dfail(d, ADRENO_ERR_INPUT,
                     "the prompt has %zu tokens, more than the context of %lld tokens (the decoder's max_context; "
                     "compile it with a larger one: the model's rotary tables allow %lld)",
                     prompt_len, (long long)d->max_context, (long long)d->max_positions);
    memset(result, 0, sizeof *result);
    result->stop_reason = "max_new_tokens";
    uint64_t rng = options->seed;
    if ((st = adreno_decoder_reset(d))) return st;
    double start = now_ms();
    if ((st = feed(d, prompt, prompt_len))) return st;
    double t_prefill = now_ms() - start, t_decode = 0;
    result->prompt_tokens = (int)prompt_len;
    int n = 0;
    for (;;) {
        int32_t token = choose(d, options, &rng);
        tokens[n] = token;
        if (logits) memcpy(logits + (size_t)n * (size_t)d->vocab, d->logits, (size_t)d->vocab * sizeof *logits);
        n++;
        if (n == 1) result->ttft_ms = now_ms() - start;
        int eos = 0;
        for (int i = 0; options->stop_at_eos && i < d->num_eos; i++) eos |= d->eos[i] == token;
        if (eos) {
            result->stop_reason = "eos";
            break;
        }
        if (n >= options->max_new_tokens) break;
        if (d->position >= d->max_context) {
            result->stop_reason = "max_context";
            break;
        }
        double t0 = now_ms();
        if ((st = adreno_decoder_step(d, token, NULL))) {
            result->num_tokens = n;
            return st;
        }
        t_decode += now_ms() - t0;
    }
    result->num_tokens = n;
    result->prefill_ms = t_prefill;
    result->decode_ms = t_decode;
    result->prefill_tok_s = t_prefill > 0 ? (double)prompt_len / (t_prefill * 1e-3) : 0.0;
    result->decode_tok_s = n > 1 && t_decode > 0 ? (double)(n - 1) / (t_decode * 1e-3) : 0.0;
    return ADRENO_OK;
}
