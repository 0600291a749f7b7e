/* See json.h. A recursive-descent parser into an arena. */
#define _POSIX_C_SOURCE 200809L /* newlocale, uselocale */
#include "json.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    /* data follows, max-aligned */
} arena_block;

struct json_doc {
    arena_block *blocks;
    json_value root;
};

typedef struct {
    const char *text, *p, *end;
    json_doc *doc;
    char *error;
    size_t error_size;
    int failed;
} parser;

static void *arena_alloc(json_doc *doc, size_t n) {
    const size_t align = 16; /* enough for any scalar */
    arena_block *b = doc->blocks;
    n = (n + align - 1) / align * align;
    if (n == 0) n = align;
    if (!b || b->size - b->used < n) {
        size_t size = n > 65536 ? n : 65536;
        size_t header = (sizeof(arena_block) + align - 1) / align * align;
        b = (arena_block *)malloc(header + size);
        if (!b) return NULL;
        b->next = doc->blocks;
        b->used = header;
        b->size = header + size;
        doc->blocks = b;
    }
    void *out = (char *)b + b->used;
    b->used += n;
    return out;
}

void json_free(json_doc *doc) {
    if (!doc) return;
    arena_block *b = doc->blocks;
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(doc);
}

static void fail(parser *ps, const char *why) {
    if (ps->failed) return;
    ps->failed = 1;
    int line = 1, column = 1;
    for (const char *q = ps->text; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    if (ps->error && ps->error_size) snprintf(ps->error, ps->error_size, "line %d, column %d: %s", line, column, why);
}

static void oom(parser *ps) {
    if (ps->failed) return;
    ps->failed = 1;
    if (ps->error && ps->error_size) snprintf(ps->error, ps->error_size, "out of memory");
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

static int parse_value(parser *ps, json_value *out, int depth);

static int hex4(parser *ps, unsigned *out) {
    unsigned v = 0;
    if (ps->end - ps->p < 4) {
        fail(ps, "truncated \\u escape");
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else {
            fail(ps, "bad \\u escape");
            return 0;
        }
    }
    ps->p += 4;
    *out = v;
    return 1;
}

/* Length of the valid UTF-8 sequence at p (2 to 4 bytes; RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3;
    else if (c >= 0xF0 && c <= 0xF4) n = 4;
    else return 0;
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;
    else if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
    if ((size_t)(end - p) < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return n;
}

/* Called with ps->p on the opening quote. The decoded string is never longer than
 * its escaped form, so one arena allocation of that size holds it. */
static int parse_string(parser *ps, const char **out, size_t *out_len) {
    const char *start = ++ps->p;
    const char *q = start;
    while (q < ps->end && *q != '"') {
        if (*q == '\\') q++;
        q++;
    }
    if (q >= ps->end) {
        fail(ps, "unterminated string");
        return 0;
    }
    char *buf = (char *)arena_alloc(ps->doc, (size_t)(q - start) + 1);
    if (!buf) {
        oom(ps);
        return 0;
    }
    size_t n = 0;
    while (ps->p < q) {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            fail(ps, "control character in string");
            return 0;
        }
        if (c >= 0x80) {
            size_t len = utf8_sequence((const unsigned char *)ps->p, (const unsigned char *)q);
            if (!len) {
                fail(ps, "invalid UTF-8 in string");
                return 0;
            }
            memcpy(buf + n, ps->p, len);
            n += len;
            ps->p += len;
            continue;
        }
        if (c != '\\') {
            buf[n++] = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        char e = *ps->p++;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!hex4(ps, &cp)) return 0;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    fail(ps, "unpaired surrogate in \\u escape");
                    return 0;
                }
                ps->p += 2;
                if (!hex4(ps, &lo)) return 0;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(ps, "unpaired surrogate in \\u escape");
                    return 0;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(ps, "unpaired surrogate in \\u escape");
                return 0;
            }
            if (cp == 0) {
                fail(ps, "\\u0000 in a string is not supported");
                return 0;
            }
            /* UTF-8: at most 4 bytes, and the escape took at least 6. */
            if (cp < 0x80) {
                buf[n++] = (char)cp;
            } else if (cp < 0x800) {
                buf[n++] = (char)(0xC0 | (cp >> 6));
                buf[n++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                buf[n++] = (char)(0xE0 | (cp >> 12));
                buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                buf[n++] = (char)(0x80 | (cp & 0x3F));
            } else {
                buf[n++] = (char)(0xF0 | (cp >> 18));
                buf[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                buf[n++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            ps->p--;
            fail(ps, "bad escape in string");
            return 0;
        }
    }
    ps->p = q + 1;
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 1;
}

static int parse_number(parser *ps, json_value *out) {
    const char *s = ps->p;
    int integer = 1;
    if (ps->p < ps->end && *ps->p == '-') ps->p++;
    if (ps->p < ps->end && *ps->p == 'I') {
        if (!literal(ps, "Infinity")) {
            fail(ps, "bad number");
            return 0;
        }
        out->type = JSON_NUMBER;
        out->number = *s == '-' ? -INFINITY : INFINITY;
        return 1;
    }
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
        fail(ps, "bad number");
        return 0;
    }
    if (*ps->p == '0' && ps->p + 1 < ps->end && ps->p[1] >= '0' && ps->p[1] <= '9') {
        fail(ps, "leading zero in number");
        return 0;
    }
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    if (ps->p < ps->end && *ps->p == '.') {
        integer = 0;
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
            fail(ps, "bad fraction in number");
            return 0;
        }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        integer = 0;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
            fail(ps, "bad exponent in number");
            return 0;
        }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    char small[64], *tmp = small, *end = NULL;
    size_t len = (size_t)(ps->p - s);
    if (len > 4096) {
        fail(ps, "number too long");
        return 0;
    }
    if (len >= sizeof small && !(tmp = (char *)malloc(len + 1))) {
        oom(ps);
        return 0;
    }
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    out->type = JSON_NUMBER;
    out->number = strtod(tmp, &end); /* in the "C" locale: json_parse sets it */
    int whole = end == tmp + len;
    if (integer && whole) {
        errno = 0;
        long long v = strtoll(tmp, &end, 10);
        if (errno == 0 && end == tmp + len) {
            out->is_integer = 1;
            out->integer = (int64_t)v;
        }
    }
    if (tmp != small) free(tmp);
    if (!whole) {
        fail(ps, "number not understood");
        return 0;
    }
    return 1;
}

typedef struct {
    json_value *items;
    const char **keys;
    size_t n, cap;
} vec;

static int vec_push(vec *v, int with_keys) {
    if (v->n < v->cap) return 1;
    size_t cap = v->cap ? v->cap * 2 : 8;
    json_value *items = (json_value *)realloc(v->items, cap * sizeof *items);
    if (!items) return 0;
    v->items = items;
    if (with_keys) {
        const char **keys = (const char **)realloc((void *)v->keys, cap * sizeof *keys);
        if (!keys) return 0;
        v->keys = keys;
    }
    v->cap = cap;
    return 1;
}

static void vec_free(vec *v) {
    free(v->items);
    free((void *)v->keys);
}

static int compare_keys(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Whether an object's keys repeat. Readers disagree on duplicates (Python keeps the last
 * one, json_get finds the first), so a manifest with one would mean different things to
 * different runtimes: it is refused. Sorting a copy keeps this O(n log n). */
static int has_duplicate_key(parser *ps, vec *v) {
    if (v->n < 2) return 0;
    const char **sorted = (const char **)malloc(v->n * sizeof *sorted);
    if (!sorted) {
        oom(ps);
        return 1;
    }
    memcpy((void *)sorted, v->keys, v->n * sizeof *sorted);
    qsort((void *)sorted, v->n, sizeof *sorted, compare_keys);
    int dup = 0;
    for (size_t i = 1; i < v->n && !dup; i++) dup = strcmp(sorted[i - 1], sorted[i]) == 0;
    free((void *)sorted);
    if (dup) fail(ps, "duplicate key in object");
    return dup;
}

/* Moves the collected members into the arena. */
static int vec_finish(parser *ps, vec *v, json_value *out, int with_keys) {
    if (with_keys && has_duplicate_key(ps, v)) {
        vec_free(v);
        return 0;
    }
    out->length = v->n;
    if (v->n) {
        out->items = (json_value *)arena_alloc(ps->doc, v->n * sizeof *out->items);
        if (!out->items) goto nomem;
        memcpy(out->items, v->items, v->n * sizeof *out->items);
        if (with_keys) {
            out->keys = (const char **)arena_alloc(ps->doc, v->n * sizeof *out->keys);
            if (!out->keys) goto nomem;
            memcpy((void *)out->keys, v->keys, v->n * sizeof *out->keys);
        }
    }
    vec_free(v);
    return 1;
nomem:
    vec_free(v);
    oom(ps);
    return 0;
}

static int parse_array(parser *ps, json_value *out, int depth) {
    vec v = {0};
    out->type = JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 1;
    }
    for (;;) {
        if (!vec_push(&v, 0)) {
            vec_free(&v);
            oom(ps);
            return 0;
        }
        memset(&v.items[v.n], 0, sizeof v.items[v.n]);
        if (!parse_value(ps, &v.items[v.n], depth + 1)) {
            vec_free(&v);
            return 0;
        }
        v.n++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return vec_finish(ps, &v, out, 0);
        }
        vec_free(&v);
        fail(ps, "expected ',' or ']' in array");
        return 0;
    }
}

static int parse_object(parser *ps, json_value *out, int depth) {
    vec v = {0};
    out->type = JSON_OBJECT;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 1;
    }
    for (;;) {
        if (!vec_push(&v, 1)) {
            vec_free(&v);
            oom(ps);
            return 0;
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            vec_free(&v);
            fail(ps, "expected a string key in object");
            return 0;
        }
        size_t klen;
        if (!parse_string(ps, &v.keys[v.n], &klen)) {
            vec_free(&v);
            return 0;
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            vec_free(&v);
            fail(ps, "expected ':' after object key");
            return 0;
        }
        ps->p++;
        memset(&v.items[v.n], 0, sizeof v.items[v.n]);
        if (!parse_value(ps, &v.items[v.n], depth + 1)) {
            vec_free(&v);
            return 0;
        }
        v.n++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return vec_finish(ps, &v, out, 1);
        }
        vec_free(&v);
        fail(ps, "expected ',' or '}' in object");
        return 0;
    }
}

static int parse_value(parser *ps, json_value *out, int depth) {
    if (depth > JSON_MAX_DEPTH) {
        fail(ps, "nested too deeply");
        return 0;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of input");
        return 0;
    }
    switch (*ps->p) {
    case '{': return parse_object(ps, out, depth);
    case '[': return parse_array(ps, out, depth);
    case '"':
        out->type = JSON_STRING;
        return parse_string(ps, &out->string, &out->length);
    case 't':
        if (literal(ps, "true")) {
            out->type = JSON_BOOL;
            out->boolean = 1;
            return 1;
        }
        break;
    case 'f':
        if (literal(ps, "false")) {
            out->type = JSON_BOOL;
            return 1;
        }
        break;
    case 'n':
        if (literal(ps, "null")) {
            out->type = JSON_NULL;
            return 1;
        }
        break;
    case 'N':
        if (literal(ps, "NaN")) {
            out->type = JSON_NUMBER;
            out->number = NAN;
            return 1;
        }
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9') || *ps->p == 'I') return parse_number(ps, out);
    }
    fail(ps, "unexpected character");
    return 0;
}

json_doc *json_parse(const char *text, size_t length, const json_value **root, char *error, size_t error_size) {
    json_doc *doc = (json_doc *)calloc(1, sizeof *doc);
    if (!doc) {
        if (error && error_size) snprintf(error, error_size, "out of memory");
        return NULL;
    }
    parser ps = {text, text, text + length, doc, error, error_size, 0};
    /* Numbers are read with strtod, which follows the thread's locale (a decimal comma
     * would turn 0.5 into 0): parse in the "C" locale. If it cannot be had, strtod in
     * another locale stops early at the '.', which parse_number reports as an error. */
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t previous = c_locale ? uselocale(c_locale) : (locale_t)0;
    int ok = parse_value(&ps, &doc->root, 0);
    if (ok) {
        skip_ws(&ps);
        if (ps.p != ps.end) {
            fail(&ps, "unexpected text after the JSON value");
            ok = 0;
        }
    }
    if (c_locale) {
        uselocale(previous);
        freelocale(c_locale);
    }
    if (!ok) {
        json_free(doc);
        return NULL;
    }
    *root = &doc->root;
    return doc;
}

const json_value *json_get(const json_value *object, const char *key) {
    if (!object || object->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->length; i++)
        if (strcmp(object->keys[i], key) == 0) return &object->items[i];
    return NULL;
}
