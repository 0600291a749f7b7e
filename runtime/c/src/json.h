/* A small JSON reader for the artifact manifest (RFC 8259, plus the NaN / Infinity /
 * -Infinity tokens that Python's json module writes for non-finite floats).
 *
 * Why not a library: the runtime's only dependency is the OpenCL ICD loader, so that
 * it builds unchanged with the Android NDK next to the vendor's libOpenCL.so. The
 * manifest needs objects, arrays, strings, integers and numbers; this parser is
 * strict about all of them (an error names line and column) and bounded (nesting depth,
 * integer range), because an artifact can come from anywhere.
 *
 * Every value lives in one arena owned by the json_doc: json_free() releases all. */
#ifndef ADRENO_JSON_H
#define ADRENO_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;

struct json_value {
    json_type type;
    int is_integer;      /* JSON_NUMBER written without fraction or exponent, fits int64 */
    int boolean;         /* JSON_BOOL */
    int64_t integer;     /* JSON_NUMBER with is_integer */
    double number;       /* JSON_NUMBER (also set for integers) */
    const char *string;  /* JSON_STRING: NUL-terminated UTF-8 (may contain no NUL: refused) */
    size_t length;       /* JSON_STRING: bytes; JSON_ARRAY / JSON_OBJECT: members */
    json_value *items;   /* JSON_ARRAY elements, JSON_OBJECT values */
    const char **keys;   /* JSON_OBJECT keys, parallel to items */
};

typedef struct json_doc json_doc;

/* Parses `text` (`length` bytes, need not be NUL-terminated). On success returns a
 * document and sets *root; on failure returns NULL and writes "line L, column C: why"
 * into `error`. A NULL return with error "out of memory" means exactly that. */
json_doc *json_parse(const char *text, size_t length, const json_value **root, char *error, size_t error_size);
void json_free(json_doc *doc);

/* The member `key` of an object, or NULL (also when `object` is not an object). */
const json_value *json_get(const json_value *object, const char *key);

#endif
