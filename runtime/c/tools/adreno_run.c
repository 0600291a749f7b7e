/* adreno-run: run an adreno-mlir artifact from the command line.
 *
 *   adreno-run model.adreno [--input [NAME=]x.npy]... [--output [NAME=]y.npy]...
 *              [--device N|NAME] [--repeat N] [--warmup N] [--profile] [--top N] [--io auto|pinned|direct]
 *              [--seed N] [--no-verify] [--info] [--opencl-library PATH]
 *   adreno-run --generate DECODER.adreno --prompt-ids 1,2,3 [--max-new-tokens N] [--json OUT.json]
 *              [--save-logits OUT.npy|OUT.bin] [--ignore-eos] [--temperature T] [--top-k K] [--seed N]
 *
 * Inputs are .npy files of the model's input shapes (C order): float32 for a float input,
 * int32 or int64 for an input of token ids (i32, format version 2; int64 ids are narrowed,
 * and every id must lie in the input's [-bound, bound)). Without --input, every input gets
 * seeded random data and the runner says so: uniform in [-1, 1) for a float input, ids
 * uniform in [0, bound) for an i32 one, from the generator of
 * adreno_mlir/runtime/random_inputs.py (random_input), so `adreno-mlir run X.adreno --seed N`
 * draws the same data. Outputs are written as float32 .npy files. It prints the device,
 * where the program came from, the load time and the wall latency of one inference (upload +
 * launches + download; median and minimum over --repeat runs after --warmup runs); --profile
 * adds the device time from OpenCL events, per ONNX node (the manifest's launch "node"s) and in
 * total. --info prints the model's inputs, outputs and launches and exits without running.
 * --opencl-library names the OpenCL library to load (default:
 * $ADRENO_RT_OPENCL_LIBRARY, else the ICD loader libOpenCL.so.1, else the vendor's; see
 * adreno_options.opencl_library). Exit status: 0 success, 1 error (message on stderr),
 * 2 usage.
 *
 * --generate runs a decoder artifact (a prefill and a decode program sharing a KV cache,
 * written by adreno_mlir.compile_decoder(...).save(PATH)) through the generation loop of the
 * library (adreno_decoder_generate): the prompt's ids, then up to --max-new-tokens tokens, greedy
 * (the largest logit) unless --temperature or --top-k asks for sampling (seeded by --seed; the
 * generator is not numpy's, so sampled tokens differ from adreno_mlir's). It prints the generated
 * ids, the time to first token and the prefill and decode tokens per second; --json writes
 * {"tokens", "ttft_ms", "prefill_tok_s", "decode_tok_s", ...}, --save-logits the logits each
 * generated token was chosen from ([tokens, vocab] float32: a .npy, or raw little-endian .bin).
 * No Python runs. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adreno_rt.h"

static const char *usage =
    "usage: adreno-run MODEL.adreno [--input [NAME=]x.npy]... [--output [NAME=]y.npy]...\n"
    "                  [--device N|NAME] [--repeat N] [--warmup N] [--profile] [--top N] [--io auto|pinned|direct]\n"
    "                  [--seed N] [--no-verify] [--info] [--opencl-library PATH]\n"
    "  --input [NAME=]x.npy   a float32 .npy of an input's shape, int32 or int64 for token ids (default:\n"
    "                         seeded random data, uniform in [-1, 1), ids uniform in [0, bound): the same\n"
    "                         as `adreno-mlir run X.adreno --seed N` draws)\n"
    "  --seed N               the seed of the random inputs (default 0, as adreno-mlir run's)\n"
    "  --profile              device time from OpenCL events: a table per ONNX node (launches without a\n"
    "                         node under <kernel>), longest first, then the total and the launch overhead\n"
    "  --top N                with --profile, show only the N longest rows (default: all)\n"
    "  --info                 print the model, device, inputs, outputs and launches, and exit without\n"
    "                         running (--input, --output, --seed, --repeat and --profile are then ignored)\n"
    "  --opencl-library PATH  the OpenCL library to load (default: $ADRENO_RT_OPENCL_LIBRARY, else\n"
    "                         libOpenCL.so.1, libOpenCL.so, then on Android /vendor/lib64/libOpenCL.so)\n"
    "\n"
    "       adreno-run --generate DECODER.adreno --prompt-ids 1,2,3 [--max-new-tokens N] [--json OUT.json]\n"
    "                  [--save-logits OUT.npy|OUT.bin] [--ignore-eos] [--temperature T] [--top-k K] [--seed N]\n"
    "  --generate             run a decoder artifact's generation loop (adreno_mlir.compile_decoder(...).save)\n"
    "  --prompt-ids IDS       the prompt: comma-separated token ids\n"
    "  --max-new-tokens N     tokens to generate (default 32; fewer at an end-of-sequence id or a full context)\n"
    "  --json OUT.json        write {tokens, ttft_ms, prefill_tok_s, decode_tok_s, ...}\n"
    "  --save-logits FILE     the logits of every generated token, [tokens, vocab] float32 (.npy or raw .bin)\n"
    "  --ignore-eos           do not stop at the decoder's end-of-sequence ids\n"
    "  --temperature T, --top-k K   sample from softmax(logits / T) among the K largest (default: greedy)\n";

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ .npy */

/* Reads a little-endian C-order .npy file for an input of type `want`: float32 for a float
 * input; int32, or int64 narrowed to int32, for an input of token ids (an int64 value that
 * int32 cannot hold is refused here, naming the input and its range: it lies outside
 * [-bound, bound) whatever the bound; the C API checks the others). Returns the data
 * (malloc'd, 4-byte elements) and its shape, or NULL with a message in `err`. */
static void *npy_read(const char *path, adreno_dtype want, const char *input, int64_t bound, int64_t *shape,
                      int *rank, size_t *count, char *err, size_t errsize) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errsize, "cannot open %s", path);
        return NULL;
    }
    unsigned char head[10];
    char *header = NULL;
    void *data = NULL;
    int64_t *wide = NULL;
    if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
        snprintf(err, errsize, "%s is not a .npy file", path);
        goto fail;
    }
    size_t hlen;
    if (head[6] == 1) {
        hlen = (size_t)head[8] | (size_t)head[9] << 8;
    } else if (head[6] == 2 || head[6] == 3) {
        unsigned char more[2];
        if (fread(more, 1, 2, f) != 2) {
            snprintf(err, errsize, "%s: truncated header", path);
            goto fail;
        }
        hlen = (size_t)head[8] | (size_t)head[9] << 8 | (size_t)more[0] << 16 | (size_t)more[1] << 24;
    } else {
        snprintf(err, errsize, "%s: unsupported .npy version %d", path, head[6]);
        goto fail;
    }
    if (hlen > 1 << 20) {
        snprintf(err, errsize, "%s: header too long", path);
        goto fail;
    }
    header = (char *)calloc(hlen + 1, 1);
    if (!header || fread(header, 1, hlen, f) != hlen) {
        snprintf(err, errsize, "%s: truncated header", path);
        goto fail;
    }
    size_t itemsize = 4; /* of the file's elements */
    if (want == ADRENO_DTYPE_I32) {
        if (strstr(header, "'descr': '<i8'") || strstr(header, "'descr': '=i8'")) {
            itemsize = 8;
        } else if (!strstr(header, "'descr': '<i4'") && !strstr(header, "'descr': '=i4'")) {
            snprintf(err, errsize, "%s: input '%s' takes integer token ids: the array must be int32 or int64 "
                     "(descr '<i4' or '<i8'); convert it with numpy: np.save(path, x.astype(np.int64))", path, input);
            goto fail;
        }
    } else if (!strstr(header, "'descr': '<f4'") && !strstr(header, "'descr': '=f4'")) {
        snprintf(err, errsize, "%s: the array must be float32 (descr '<f4'); convert it with numpy: "
                 "np.save(path, x.astype(np.float32))", path);
        goto fail;
    }
    if (!strstr(header, "'fortran_order': False")) {
        snprintf(err, errsize, "%s: the array must be in C order (np.ascontiguousarray)", path);
        goto fail;
    }
    const char *s = strstr(header, "'shape': (");
    if (!s) {
        snprintf(err, errsize, "%s: no shape in the header", path);
        goto fail;
    }
    s += strlen("'shape': (");
    *rank = 0;
    *count = 1;
    while (*s && *s != ')') {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || *rank >= 16 || (v > 0 && *count > SIZE_MAX / 8 / (size_t)v)) {
            snprintf(err, errsize, "%s: bad shape in the header", path);
            goto fail;
        }
        shape[(*rank)++] = v;
        *count *= (size_t)v;
        s = end;
        while (*s == ',' || *s == ' ') s++;
    }
    const char *what = want == ADRENO_DTYPE_I32 ? "ids" : "floats";
    /* The data must be there before it is allocated: a header promising more is refused. */
    struct stat info;
    long here = ftell(f);
    if (fstat(fileno(f), &info) != 0 || here < 0 || (uint64_t)info.st_size < (uint64_t)here ||
        (uint64_t)info.st_size - (uint64_t)here < (uint64_t)*count * itemsize) {
        snprintf(err, errsize, "%s is truncated: fewer than the %zu %s its header promises", path, *count, what);
        goto fail;
    }
    data = malloc(*count ? *count * 4 : 4);
    if (itemsize == 8) wide = (int64_t *)malloc(*count ? *count * 8 : 8);
    if (!data || (itemsize == 8 && !wide)) {
        snprintf(err, errsize, "%s: out of memory", path);
        goto fail;
    }
    if (fread(wide ? (void *)wide : data, itemsize, *count, f) != *count) {
        snprintf(err, errsize, "%s is truncated: fewer than the %zu %s its header promises", path, *count, what);
        goto fail;
    }
    if (wide) { /* int64 -> int32: what int32 cannot hold is outside [-bound, bound) for every bound <= 2^31 */
        int32_t *ids = (int32_t *)data;
        for (size_t j = 0; j < *count; j++) {
            if (wide[j] < INT32_MIN || wide[j] > INT32_MAX) {
                snprintf(err, errsize, "%s: input '%s' has id %lld at element %zu, outside [-%lld, %lld) (the extent "
                         "of the table it indexes)", path, input, (long long)wide[j], j, (long long)bound,
                         (long long)bound);
                goto fail;
            }
            ids[j] = (int32_t)wide[j];
        }
        free(wide);
    }
    free(header);
    fclose(f);
    return data;
fail:
    free(header);
    free(data);
    free(wide);
    fclose(f);
    return NULL;
}

static int npy_write(const char *path, const float *data, const int64_t *shape, int rank, size_t count) {
    char dims[512] = "";
    size_t used = 0;
    for (int i = 0; i < rank; i++)
        used += (size_t)snprintf(dims + used, sizeof dims - used, "%lld%s", (long long)shape[i],
                                 rank == 1 || i < rank - 1 ? ", " : "");
    if (rank == 1) dims[used - 1] = '\0';
    char header[640];
    int n = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims);
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    unsigned short hlen = (unsigned short)(n + pad + 1);
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                              (unsigned char)(hlen >> 8)};
    int ok = fwrite(head, 1, 10, f) == 10 && fwrite(header, 1, (size_t)n, f) == (size_t)n;
    for (int i = 0; i < pad && ok; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(data, 4, count, f) == count;
    return fclose(f) == 0 && ok;
}

/* ------------------------------------------------------------------ main */

typedef struct {
    const char *name; /* NULL: by position */
    const char *path;
} named_path;

static int find_tensor(adreno_model *m, int output, const named_path *p, int position) {
    int n = output ? adreno_num_outputs(m) : adreno_num_inputs(m);
    if (!p->name) return position < n ? position : -1;
    for (int i = 0; i < n; i++)
        if (strcmp(output ? adreno_output_name(m, i) : adreno_input_name(m, i), p->name) == 0) return i;
    return -1;
}

/* NAME=PATH, or PATH (a file that exists is always taken as a path, even with a '=' in it). */
static void split(const char *arg, named_path *out) {
    const char *eq = strchr(arg, '=');
    struct stat info;
    if (eq && stat(arg, &info) != 0) {
        size_t n = (size_t)(eq - arg);
        char *name = (char *)malloc(n + 1);
        if (name) {
            memcpy(name, arg, n);
            name[n] = '\0';
        }
        out->name = name;
        out->path = eq + 1;
    } else {
        out->name = NULL;
        out->path = arg;
    }
}

/* The random inputs (adreno_mlir/runtime/random_inputs.py has the same formula and says
 * why): element j of input i for `seed` is splitmix64(seed * GOLDEN + (i << 40) + j) >> 40,
 * a 24-bit draw u, and the value 2 * u / 2^24 - 1, uniform in [-1, 1) and exact in float32;
 * for an input of token ids, (u * bound) >> 24, uniform in [0, bound) (u < 2^24 and
 * bound <= 2^31: the product fits 64 bits, and the id int32). */
#define GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t splitmix64(uint64_t z) {
    z += GOLDEN;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void random_input(uint64_t seed, int index, float *data, size_t count) {
    uint64_t base = seed * GOLDEN + ((uint64_t)index << 40);
    for (size_t j = 0; j < count; j++)
        data[j] = (float)((double)(splitmix64(base + (uint64_t)j) >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

/* The bound 2^24 is that of an integer input the model computes with (an attention mask: held
 * as float on the device, exact below 2^24): its random data is 0s and 1s (span 2), as in
 * adreno_mlir/runtime/random_inputs.py (VALUE_BOUND). */
static void random_ids(uint64_t seed, int index, uint64_t bound, int32_t *data, size_t count) {
    if (bound == ((uint64_t)1 << 24)) bound = 2;
    uint64_t base = seed * GOLDEN + ((uint64_t)index << 40);
    for (size_t j = 0; j < count; j++) data[j] = (int32_t)(((splitmix64(base + (uint64_t)j) >> 40) * bound) >> 24);
}

/* A decimal integer, possibly negative (taken modulo 2^64, as Python's seed is). */
static int parse_seed(const char *text, uint64_t *seed) {
    char *end;
    if (!*text) return 0;
    if (text[0] == '-') {
        long long v = strtoll(text, &end, 10);
        if (*end || end == text) return 0;
        *seed = (uint64_t)v;
    } else {
        if (text[0] == '+' || text[0] == ' ') return 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (*end || end == text) return 0;
        *seed = (uint64_t)v;
    }
    return 1;
}

/* --------------------------------------------------------- the profile table */

static const adreno_model *sort_model; /* for the comparators (C99 has no qsort_r) */
static char **sort_keys;

/* A launch's row: its ONNX node, or <kernel> for a launch without one. */
static char *row_key(const adreno_model *m, int i) {
    const char *node = adreno_launch_node(m, i), *kernel = adreno_launch_kernel(m, i);
    size_t n = *node ? strlen(node) : strlen(kernel) + 2;
    char *key = (char *)malloc(n + 1);
    if (!key) return NULL;
    if (*node) memcpy(key, node, n + 1);
    else snprintf(key, n + 1, "<%s>", kernel);
    return key;
}

/* By row, then kernel, then launch index. */
static int compare_launch(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(sort_keys[x], sort_keys[y]);
    if (!c) c = strcmp(adreno_launch_kernel(sort_model, x), adreno_launch_kernel(sort_model, y));
    return c ? c : (x > y) - (x < y);
}

typedef struct {
    const char *key;
    int first;    /* its first launch (the kernel shown) */
    int kernels;  /* distinct kernels */
    int launches;
    double ms;
} profile_row;

static int compare_row(const void *a, const void *b) {
    const profile_row *x = (const profile_row *)a, *y = (const profile_row *)b;
    if (x->ms != y->ms) return x->ms < y->ms ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

/* `name` cut to `width` characters the way `adreno-mlir analyze` cuts: "..." + its end. */
static void print_cut(const char *name, int width) {
    size_t n = strlen(name);
    if ((int)n <= width) printf("%-*s", width, name);
    else printf("...%s", name + n - (size_t)(width - 3));
}

/* The launches grouped by row, longest first (at most `top` rows when top > 0). 0: out of memory. */
static int print_profile_table(const adreno_model *m, const double *launch_ms, int top) {
    int nl = adreno_num_launches(m), nr = 0, ok = 0;
    char **keys = (char **)calloc(nl ? (size_t)nl : 1, sizeof *keys);
    int *order = (int *)malloc((nl ? (size_t)nl : 1) * sizeof *order);
    profile_row *rows = (profile_row *)calloc(nl ? (size_t)nl : 1, sizeof *rows);
    if (!keys || !order || !rows) goto done;
    for (int i = 0; i < nl; i++) {
        if (!(keys[i] = row_key(m, i))) goto done;
        order[i] = i;
    }
    sort_model = m;
    sort_keys = keys;
    qsort(order, (size_t)nl, sizeof *order, compare_launch);
    double total = 0;
    for (int k = 0; k < nl; k++) {
        int i = order[k];
        total += launch_ms[i];
        if (!nr || strcmp(rows[nr - 1].key, keys[i]) != 0) {
            rows[nr].key = keys[i];
            rows[nr].first = i;
            rows[nr].kernels = 1;
            nr++;
        } else if (strcmp(adreno_launch_kernel(m, order[k - 1]), adreno_launch_kernel(m, i)) != 0) {
            rows[nr - 1].kernels++;
        }
        profile_row *r = &rows[nr - 1];
        if (i < r->first) r->first = i;
        r->launches++;
        r->ms += launch_ms[i];
    }
    qsort(rows, (size_t)nr, sizeof *rows, compare_row);
    int shown = top > 0 && top < nr ? top : nr, width = 4, kwidth = 6;
    char label[96];
    for (int k = 0; k < shown; k++) {
        int n = (int)strlen(rows[k].key);
        if (n > width) width = n;
        snprintf(label, sizeof label, "%.80s", adreno_launch_kernel(m, rows[k].first));
        n = (int)strlen(label);
        if (rows[k].kernels > 1) n += snprintf(NULL, 0, " +%d", rows[k].kernels - 1);
        if (n > kwidth) kwidth = n;
    }
    if (width > 44) width = 44;
    if (kwidth > 40) kwidth = 40;
    printf("%-*s  %-*s  %8s  %9s  %6s\n", width, "node", kwidth, "kernel", "launches", "device ms", "share");
    for (int k = 0; k < shown; k++) {
        const profile_row *r = &rows[k];
        char kernel[128];
        if (r->kernels > 1)
            snprintf(kernel, sizeof kernel, "%.80s +%d", adreno_launch_kernel(m, r->first), r->kernels - 1);
        else
            snprintf(kernel, sizeof kernel, "%.80s", adreno_launch_kernel(m, r->first));
        print_cut(r->key, width);
        printf("  ");
        print_cut(kernel, kwidth);
        printf("  %8d  %9.4f  %5.1f%%\n", r->launches, r->ms, total > 0 ? 100 * r->ms / total : 0.0);
    }
    if (shown < nr) {
        double rest = 0;
        for (int k = shown; k < nr; k++) rest += rows[k].ms;
        printf("... %d more rows (--top %d): %.4f ms, %.1f%%\n", nr - shown, top, rest,
               total > 0 ? 100 * rest / total : 0.0);
    }
    ok = 1;
done:
    for (int i = 0; keys && i < nl; i++) free(keys[i]);
    free(keys);
    free(order);
    free(rows);
    return ok;
}

static int compare_string(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The number of distinct kernels the launches run (-1: out of memory). */
static int distinct_kernels(const adreno_model *m) {
    int nl = adreno_num_launches(m), n = 0;
    const char **names = (const char **)malloc((nl ? (size_t)nl : 1) * sizeof *names);
    if (!names) return -1;
    for (int i = 0; i < nl; i++) names[i] = adreno_launch_kernel(m, i);
    qsort(names, (size_t)nl, sizeof *names, compare_string);
    for (int i = 0; i < nl; i++) n += !i || strcmp(names[i - 1], names[i]) != 0;
    free(names);
    return n;
}

static void print_shape(FILE *f, const int64_t *shape, int rank) {
    fputc('[', f);
    for (int i = 0; i < rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)shape[i]);
    fputc(']', f);
}

/* ------------------------------------------------------------------ --generate */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* "1,2,3" -> ids (malloc'd); 0 when it is not a list of integers. */
static int parse_ids(const char *text, int32_t **ids, size_t *count) {
    size_t n = 1;
    for (const char *c = text; *c; c++) n += *c == ',';
    *ids = (int32_t *)malloc(n * sizeof **ids);
    *count = 0;
    if (!*ids) return 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ') p++;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < INT32_MIN || v > INT32_MAX) return 0;
        (*ids)[(*count)++] = (int32_t)v;
        p = end;
        while (*p == ' ') p++;
        if (*p == '\0') return 1;
        if (*p != ',') return 0;
        p++;
        if (*p == '\0') return 1; /* a trailing comma */
    }
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

/* JSON numbers: finite, else 0 (JSON has no infinities). */
static double finite_or_zero(double x) { return x - x == 0 ? x : 0.0; }

typedef struct {
    const char *path;
    const int32_t *prompt;
    size_t prompt_len;
    adreno_generate_options gen;
    const char *json, *logits;
    int info;
} generate_args;

static int run_generate(const generate_args *a, const adreno_options *options) {
    char err[4096];
    adreno_decoder *d = NULL;
    int32_t *tokens = NULL;
    float *logits = NULL;
    int status = 1;
    double t0 = now_ms();
    adreno_status st = adreno_decoder_open(a->path, options, &d, err, sizeof err);
    double load_ms = now_ms() - t0;
    if (st != ADRENO_OK) {
        fprintf(stderr, "adreno-run: error: %s\n", err);
        return 1;
    }
    const adreno_model *pre = adreno_decoder_model(d, 0), *dec = adreno_decoder_model(d, 1);
    long long vocab = (long long)adreno_decoder_vocab(d), context = (long long)adreno_decoder_max_context(d);
    printf("model:   %s\nopencl:  %s\ndevice:  %s\nprogram: prefill %s, decode %s\nload:    %.1f ms\n", a->path,
           adreno_opencl_library(), adreno_device_name(dec), adreno_program_origin(pre), adreno_program_origin(dec),
           load_ms);
    printf("decoder: vocab %lld, context %lld tokens, prefill chunk %lld, %d state buffers, eos ids [", vocab, context,
           (long long)adreno_decoder_prefill_chunk(d), adreno_num_states(pre));
    for (int i = 0; i < adreno_decoder_num_eos(d); i++) printf("%s%ld", i ? ", " : "", (long)adreno_decoder_eos(d)[i]);
    printf("]; launches: prefill %d, decode %d\n", adreno_num_launches(pre), adreno_num_launches(dec));
    if (a->info) {
        status = 0;
        goto out;
    }
    tokens = (int32_t *)malloc((size_t)a->gen.max_new_tokens * sizeof *tokens);
    if (a->logits) logits = (float *)malloc((size_t)a->gen.max_new_tokens * (size_t)vocab * sizeof *logits);
    if (!tokens || (a->logits && !logits)) {
        fprintf(stderr, "adreno-run: error: out of memory (%d tokens%s)\n", a->gen.max_new_tokens,
                a->logits ? " and their logits" : "");
        goto out;
    }
    adreno_generation g;
    st = adreno_decoder_generate(d, a->prompt, a->prompt_len, &a->gen, tokens, logits, &g);
    if (st != ADRENO_OK) {
        fprintf(stderr, "adreno-run: error: %s\n", adreno_decoder_error(d));
        goto out;
    }
    if (!strcmp(g.stop_reason, "max_context"))
        fprintf(stderr, "adreno-run: warning: generation stopped after %d tokens: the context of %lld tokens is full "
                "(compile the decoder with a larger max_context)\n", g.num_tokens, context);
    printf("tokens: ");
    for (int i = 0; i < g.num_tokens; i++) printf("%s%ld", i ? "," : "", (long)tokens[i]);
    printf("\nprompt %d tokens, generated %d (%s); time to first token %.1f ms, prefill %.1f tokens/s, decode %.1f "
           "tokens/s\n", g.prompt_tokens, g.num_tokens, g.stop_reason, g.ttft_ms, g.prefill_tok_s, g.decode_tok_s);
    if (a->json) {
        FILE *f = fopen(a->json, "w");
        if (!f) {
            fprintf(stderr, "adreno-run: error: cannot write %s\n", a->json);
            goto out;
        }
        fprintf(f, "{\n  \"tokens\": [");
        for (int i = 0; i < g.num_tokens; i++) fprintf(f, "%s%ld", i ? ", " : "", (long)tokens[i]);
        fprintf(f, "],\n  \"ttft_ms\": %.6g,\n  \"prefill_tok_s\": %.6g,\n  \"decode_tok_s\": %.6g,\n",
                finite_or_zero(g.ttft_ms), finite_or_zero(g.prefill_tok_s), finite_or_zero(g.decode_tok_s));
        fprintf(f, "  \"prompt_tokens\": %d,\n  \"stop_reason\": \"%s\",\n  \"max_context\": %lld,\n"
                "  \"prefill_chunk\": %lld,\n  \"load_ms\": %.6g,\n  \"runtime\": \"adreno-run\",\n  \"device\": ",
                g.prompt_tokens, g.stop_reason, context, (long long)adreno_decoder_prefill_chunk(d),
                finite_or_zero(load_ms));
        json_string(f, adreno_device_name(dec));
        fprintf(f, "\n}\n");
        if (fclose(f) != 0) {
            fprintf(stderr, "adreno-run: error: cannot write %s\n", a->json);
            goto out;
        }
    }
    if (a->logits) {
        int ok;
        size_t count = (size_t)g.num_tokens * (size_t)vocab;
        if (ends_with(a->logits, ".bin")) {
            FILE *f = fopen(a->logits, "wb");
            ok = f && fwrite(logits, 4, count, f) == count;
            if (f) ok = fclose(f) == 0 && ok;
        } else {
            int64_t shape[2] = {g.num_tokens, vocab};
            ok = npy_write(a->logits, logits, shape, 2, count);
        }
        if (!ok) {
            fprintf(stderr, "adreno-run: error: cannot write %s\n", a->logits);
            goto out;
        }
        printf("logits [%d, %lld] -> %s\n", g.num_tokens, vocab, a->logits);
    }
    status = 0;
out:
    free(tokens);
    free(logits);
    adreno_decoder_close(d);
    return status;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    named_path inputs[64], outputs[64];
    int num_in = 0, num_out = 0, repeat = 10, warmup = 2, profile = 0, info = 0, top = 0, status = 1;
    uint64_t seed = 0;
    const char *seed_text = "0";
    adreno_options options;
    adreno_options_init(&options);
    int generate = 0, sampling = 0;
    const char *prompt_text = NULL;
    int32_t *prompt = NULL;
    generate_args gen_args;
    memset(&gen_args, 0, sizeof gen_args);
    adreno_generate_options_init(&gen_args.gen);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if ((!strcmp(a, "--input") || !strcmp(a, "-i")) && more && num_in < 64) {
            split(argv[++i], &inputs[num_in++]);
        } else if ((!strcmp(a, "--output") || !strcmp(a, "-o")) && more && num_out < 64) {
            split(argv[++i], &outputs[num_out++]);
        } else if (!strcmp(a, "--device") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end == '\0' && v >= 0) options.device_index = (int)v;
            else options.device_match = argv[i];
        } else if (!strcmp(a, "--repeat") && more) {
            repeat = atoi(argv[++i]);
        } else if (!strcmp(a, "--warmup") && more) {
            warmup = atoi(argv[++i]);
        } else if (!strcmp(a, "--top") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > 1000000000L) {
                fprintf(stderr, "adreno-run: --top takes a positive integer, not '%s'\n%s", argv[i], usage);
                return 2;
            }
            top = (int)v;
        } else if (!strcmp(a, "--seed") && more) {
            seed_text = argv[++i];
            if (!parse_seed(seed_text, &seed)) {
                fprintf(stderr, "adreno-run: --seed takes an integer, not '%s'\n%s", argv[i], usage);
                return 2;
            }
        } else if (!strcmp(a, "--io") && more) {
            const char *v = argv[++i];
            if (!strcmp(v, "auto")) options.io_mode = ADRENO_IO_AUTO;
            else if (!strcmp(v, "pinned")) options.io_mode = ADRENO_IO_PINNED;
            else if (!strcmp(v, "direct")) options.io_mode = ADRENO_IO_DIRECT;
            else {
                fprintf(stderr, "adreno-run: --io takes auto, pinned or direct, not '%s'\n%s", v, usage);
                return 2;
            }
        } else if (!strcmp(a, "--opencl-library") && more) {
            options.opencl_library = argv[++i];
        } else if (!strcmp(a, "--generate")) {
            generate = 1;
        } else if (!strcmp(a, "--prompt-ids") && more) {
            prompt_text = argv[++i];
        } else if (!strcmp(a, "--max-new-tokens") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > 100000000L) {
                fprintf(stderr, "adreno-run: --max-new-tokens takes a positive integer, not '%s'\n%s", argv[i], usage);
                return 2;
            }
            gen_args.gen.max_new_tokens = (int)v;
        } else if (!strcmp(a, "--json") && more) {
            gen_args.json = argv[++i];
        } else if (!strcmp(a, "--save-logits") && more) {
            gen_args.logits = argv[++i];
            if (!ends_with(gen_args.logits, ".npy") && !ends_with(gen_args.logits, ".bin")) {
                fprintf(stderr, "adreno-run: --save-logits takes a .npy or .bin file, not '%s'\n%s", argv[i], usage);
                return 2;
            }
        } else if (!strcmp(a, "--ignore-eos")) {
            gen_args.gen.stop_at_eos = 0;
        } else if (!strcmp(a, "--temperature") && more) {
            char *end;
            double v = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(v > 0) || v > 1e30) {
                fprintf(stderr, "adreno-run: --temperature takes a positive number, not '%s'\n%s", argv[i], usage);
                return 2;
            }
            gen_args.gen.temperature = (float)v;
            sampling = 1;
        } else if (!strcmp(a, "--top-k") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > 1000000000L) {
                fprintf(stderr, "adreno-run: --top-k takes a positive integer, not '%s'\n%s", argv[i], usage);
                return 2;
            }
            gen_args.gen.top_k = (int)v;
            sampling = 1;
        } else if (!strcmp(a, "--profile")) {
            profile = 1;
        } else if (!strcmp(a, "--no-verify")) {
            options.verify_checksums = 0;
        } else if (!strcmp(a, "--info")) {
            info = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (a[0] != '-' && !path) {
            path = a;
        } else {
            fprintf(stderr, "adreno-run: unexpected argument '%s'\n%s", a, usage);
            return 2;
        }
    }
    if (!path) {
        fputs(usage, stderr);
        return 2;
    }
    if (repeat < 1 || warmup < 0) {
        fprintf(stderr, "adreno-run: --repeat must be >= 1 and --warmup >= 0\n");
        return 2;
    }
    if (!generate && (prompt_text || gen_args.json || gen_args.logits || !gen_args.gen.stop_at_eos || sampling ||
                      gen_args.gen.max_new_tokens != 32)) {
        fprintf(stderr, "adreno-run: --prompt-ids, --max-new-tokens, --json, --save-logits, --ignore-eos, "
                "--temperature and --top-k go with --generate\n%s", usage);
        return 2;
    }
    if (generate) {
        if (num_in || num_out || profile) {
            fprintf(stderr, "adreno-run: --generate takes a prompt (--prompt-ids), not --input, --output or "
                    "--profile\n%s", usage);
            return 2;
        }
        if (!prompt_text && !info) {
            fprintf(stderr, "adreno-run: --generate needs the prompt: --prompt-ids 1,2,3\n%s", usage);
            return 2;
        }
        size_t n = 0;
        if (prompt_text && !parse_ids(prompt_text, &prompt, &n)) {
            fprintf(stderr, "adreno-run: --prompt-ids takes comma-separated token ids such as 1,2,3, not '%s'\n%s",
                    prompt_text, usage);
            free(prompt);
            return 2;
        }
        gen_args.path = path;
        gen_args.prompt = prompt;
        gen_args.prompt_len = n;
        gen_args.info = info;
        gen_args.gen.greedy = !sampling;
        gen_args.gen.seed = seed;
        setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);
        int rc = run_generate(&gen_args, &options);
        free(prompt);
        return rc;
    }

    /* PoCL (the CPU driver on machines without a GPU) otherwise recompiles every kernel
     * for its local size at its first launch, even when the program came from a binary;
     * adreno_mlir's Python runtime makes the same choice (docs/startup.md). */
    setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);

    char err[4096];
    adreno_model *m = NULL;
    void **in_data = NULL;
    float **out_data = NULL;
    double *times = NULL, *launch_ms = NULL;
    double t0 = now_ms();
    adreno_status st = adreno_open(path, &options, &m, err, sizeof err);
    double load_ms = now_ms() - t0;
    if (st != ADRENO_OK) {
        fprintf(stderr, "adreno-run: error: %s\n", err);
        goto out;
    }
    int ni = adreno_num_inputs(m), no = adreno_num_outputs(m);
    printf("model:   %s\nopencl:  %s\ndevice:  %s\nprogram: %s\nio:      %s\nload:    %.1f ms\n", path,
           adreno_opencl_library(), adreno_device_name(m), adreno_program_origin(m), adreno_io_mode_name(m), load_ms);
    if (info) { /* what the model is, and no run: no inputs read or drawn */
        /* Inputs are float32 or int32 token ids with a bound; outputs float32. */
        for (int i = 0; i < ni; i++) {
            printf("input %d: %s ", i, adreno_input_name(m, i));
            print_shape(stdout, adreno_input_shape(m, i), adreno_input_rank(m, i));
            if (adreno_input_dtype(m, i) == ADRENO_DTYPE_I32) {
                long long bound = (long long)adreno_input_bound(m, i);
                printf(" int32 bound %lld (token ids in [-%lld, %lld))\n", bound, bound, bound);
            } else {
                printf(" float32\n");
            }
        }
        for (int i = 0; i < adreno_num_states(m); i++)
            printf("state %d: %s, %lld bytes kept on the device (zero-filled at load, never copied per run)\n", i,
                   adreno_state_name(m, i), (long long)adreno_state_bytes(m, i));
        for (int i = 0; i < no; i++) {
            printf("output %d: %s ", i, adreno_output_name(m, i));
            print_shape(stdout, adreno_output_shape(m, i), adreno_output_rank(m, i));
            printf(" float32\n");
        }
        int kernels = distinct_kernels(m);
        if (kernels < 0) {
            fprintf(stderr, "adreno-run: error: out of memory\n");
            goto out;
        }
        printf("launches: %d (%d distinct kernels)\n", adreno_num_launches(m), kernels);
        status = 0;
        goto out;
    }
    in_data = (void **)calloc((size_t)ni, sizeof *in_data);
    out_data = (float **)calloc((size_t)no, sizeof *out_data);
    if (!in_data || !out_data) {
        fprintf(stderr, "adreno-run: error: out of memory\n");
        goto out;
    }
    for (int k = 0; k < num_in; k++) {
        int i = find_tensor(m, 0, &inputs[k], k);
        if (i < 0) {
            fprintf(stderr, "adreno-run: error: --input %s%s%s: the model has no such input (inputs:", 
                    inputs[k].name ? inputs[k].name : "", inputs[k].name ? "=" : "", inputs[k].path);
            for (int j = 0; j < ni; j++) fprintf(stderr, " %s", adreno_input_name(m, j));
            fprintf(stderr, ")\n");
            goto out;
        }
        if (in_data[i]) {
            fprintf(stderr, "adreno-run: error: input '%s' given twice\n", adreno_input_name(m, i));
            goto out;
        }
        int64_t shape[16];
        int rank;
        size_t count;
        in_data[i] = npy_read(inputs[k].path, adreno_input_dtype(m, i), adreno_input_name(m, i),
                              adreno_input_bound(m, i), shape, &rank, &count, err, sizeof err);
        if (!in_data[i]) {
            fprintf(stderr, "adreno-run: error: --input: %s\n", err);
            goto out;
        }
        int same = rank == adreno_input_rank(m, i);
        for (int d = 0; same && d < rank; d++) same = shape[d] == adreno_input_shape(m, i)[d];
        if (!same) {
            fprintf(stderr, "adreno-run: error: %s has shape ", inputs[k].path);
            print_shape(stderr, shape, rank);
            fprintf(stderr, "; input '%s' of the model has shape ", adreno_input_name(m, i));
            print_shape(stderr, adreno_input_shape(m, i), adreno_input_rank(m, i));
            fprintf(stderr, "\n");
            goto out;
        }
    }
    for (int i = 0; i < ni; i++) {
        if (in_data[i]) continue;
        size_t count = adreno_input_count(m, i);
        in_data[i] = malloc(count ? count * 4 : 4);
        if (!in_data[i]) {
            fprintf(stderr, "adreno-run: error: out of memory\n");
            goto out;
        }
        if (adreno_input_dtype(m, i) == ADRENO_DTYPE_I32) {
            int64_t bound = adreno_input_bound(m, i);
            random_ids(seed, i, (uint64_t)bound, (int32_t *)in_data[i], count);
            if (bound == ((int64_t)1 << 24))
                printf("input '%s': random integers 0 or 1 (a mask-like input), seed %s (no --input given)\n",
                       adreno_input_name(m, i), seed_text);
            else
                printf("input '%s': random token ids uniform in [0, %lld), seed %s (no --input given)\n",
                       adreno_input_name(m, i), (long long)bound, seed_text);
        } else {
            random_input(seed, i, (float *)in_data[i], count);
            printf("input '%s': random uniform [-1, 1), seed %s (no --input given)\n", adreno_input_name(m, i),
                   seed_text);
        }
    }
    for (int i = 0; i < no; i++) {
        out_data[i] = (float *)malloc(adreno_output_count(m, i) * 4);
        if (!out_data[i]) {
            fprintf(stderr, "adreno-run: error: out of memory\n");
            goto out;
        }
    }
    times = (double *)calloc((size_t)repeat, sizeof *times);
    if (!times) goto out;
    for (int r = 0; r < warmup + repeat; r++) {
        double s = now_ms();
        st = adreno_run_typed(m, (const void *const *)in_data, out_data);
        double t = now_ms() - s;
        if (st != ADRENO_OK) {
            fprintf(stderr, "adreno-run: error: %s\n", adreno_error(m));
            goto out;
        }
        if (r == 0) printf("first run: %.3f ms\n", t);
        if (r >= warmup) times[r - warmup] = t;
    }
    qsort(times, (size_t)repeat, sizeof *times, compare_double);
    double median = repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]);
    printf("latency: median %.3f ms, min %.3f ms over %d runs (wall: upload, launches, download)\n", median, times[0],
           repeat);
    if (profile) {
        int nl = adreno_num_launches(m);
        launch_ms = (double *)calloc(nl ? (size_t)nl : 1, sizeof *launch_ms);
        if (!launch_ms) goto out;
        double span = 0;
        for (int i = 0; i < ni; i++) {
            st = adreno_input_dtype(m, i) == ADRENO_DTYPE_I32
                     ? adreno_set_input_i32(m, i, (const int32_t *)in_data[i], adreno_input_count(m, i))
                     : adreno_set_input(m, i, (const float *)in_data[i], adreno_input_count(m, i));
            if (st != ADRENO_OK) {
                fprintf(stderr, "adreno-run: error: %s\n", adreno_error(m));
                goto out;
            }
        }
        if (adreno_profile(m, repeat, launch_ms, &span) != ADRENO_OK) {
            fprintf(stderr, "adreno-run: error: %s\n", adreno_error(m));
            goto out;
        }
        if (!print_profile_table(m, launch_ms, top)) {
            fprintf(stderr, "adreno-run: error: out of memory\n");
            goto out;
        }
        double total = 0;
        for (int i = 0; i < nl; i++) total += launch_ms[i];
        printf("device:  %.3f ms (sum over %d launches of the median kernel time from OpenCL events); "
               "first start to last end %.3f ms\n", total, nl, span);
        double issue = 0, batched = 0;
        if (adreno_measure_launches(m, repeat, &issue, &batched) != ADRENO_OK) {
            fprintf(stderr, "adreno-run: error: %s\n", adreno_error(m));
            goto out;
        }
        printf("launch:  %.3f ms of host time to enqueue one inference; %.3f ms per inference issued back to back "
               "(no copies)\n", issue, batched);
    }
    for (int k = 0; k < num_out; k++) {
        int i = find_tensor(m, 1, &outputs[k], k);
        if (i < 0) {
            fprintf(stderr, "adreno-run: error: --output %s: the model has no such output (outputs:", outputs[k].path);
            for (int j = 0; j < no; j++) fprintf(stderr, " %s", adreno_output_name(m, j));
            fprintf(stderr, ")\n");
            goto out;
        }
        if (!npy_write(outputs[k].path, out_data[i], adreno_output_shape(m, i), adreno_output_rank(m, i),
                       adreno_output_count(m, i))) {
            fprintf(stderr, "adreno-run: error: cannot write %s\n", outputs[k].path);
            goto out;
        }
        printf("output '%s' -> %s\n", adreno_output_name(m, i), outputs[k].path);
    }
    status = 0;
out:
    if (m) {
        for (int i = 0; i < adreno_num_inputs(m) && in_data; i++) free(in_data[i]);
        for (int i = 0; i < adreno_num_outputs(m) && out_data; i++) free(out_data[i]);
    }
    free(in_data);
    free(out_data);
    free(times);
    free(launch_ms);
    for (int k = 0; k < num_in; k++) free((void *)inputs[k].name);
    for (int k = 0; k < num_out; k++) free((void *)outputs[k].name);
    adreno_close(m);
    return status;
}
