/* SHA-256 (FIPS 180-4), for checking artifact files against manifest.json's checksums
 * (a truncated copy or a flipped bit would otherwise become wrong outputs). */
#ifndef ADRENO_SHA256_H
#define ADRENO_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Writes the lowercase hex digest (64 characters and a NUL) of data[0..length). */
void sha256_hex(const void *data, size_t length, char hex[65]);

#endif
