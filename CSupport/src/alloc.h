/*
 * The engine's allocator (alloc.c). Every malloc, calloc, realloc and
 * strdup in CSupport/src goes through these, so that a test can make the
 * Nth allocation fail (alloc_torture.h, CSupport/tests/torture.c). Memory
 * from them is released with plain free(): they return malloc'd blocks,
 * and event payloads handed to Swift are free()d there.
 *
 * Any thread. libcurl's and libuv's own allocations do not come here.
 */
#ifndef COURIER_ALLOC_H
#define COURIER_ALLOC_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

void* cr__malloc(size_t size);
void* cr__calloc(size_t count, size_t size);
void* cr__realloc(void* block, size_t size);
/* NULL stays NULL (and is not counted as an allocation). */
char* cr__strdup(const char* s);
char* cr__strndup(const char* s, size_t n);

#pragma GCC visibility pop

#endif /* COURIER_ALLOC_H */
