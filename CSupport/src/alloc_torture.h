/*
 * Test-only control of the engine's allocator (alloc.c): count the
 * allocations a workload makes, or make exactly one of them fail, as
 * curl's torture tests do. Compiled into every build and called only by
 * CSupport/tests/torture.c; nothing in the engine or in Swift calls them.
 * Unarmed, an allocation costs one relaxed atomic load more than malloc.
 *
 * The counter is process-wide and shared by every thread and engine.
 */
#ifndef COURIER_ALLOC_TORTURE_H
#define COURIER_ALLOC_TORTURE_H

#pragma GCC visibility push(hidden)

/* Arms the allocator and restarts the count at 0. n > 0: the nth
 * allocation from now fails (returns NULL), and with `and_after` every
 * later one too; n == 0: count only. */
void cr__alloc_fail_at(long n, int and_after);
/* Disarms the allocator. Returns the allocations counted since the last
 * cr__alloc_fail_at(); *failed (if not NULL) is 1 when the chosen one
 * was reached and failed. */
long cr__alloc_disarm(int* failed);

#pragma GCC visibility pop

#endif /* COURIER_ALLOC_TORTURE_H */
