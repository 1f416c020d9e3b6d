#ifndef COURIER_SPAWN_H
#define COURIER_SPAWN_H

/* Adds to `actions` (a posix_spawn_file_actions_t*) the closing of every
 * descriptor >= `from` in the child: glibc's
 * posix_spawn_file_actions_addclosefrom_np, declared only under _GNU_SOURCE,
 * which Swift's Glibc module does not define. Returns 0 or an errno value.
 * (No <spawn.h> here: its types would reach Swift through this module too.) */
int courier_spawn_close_from(void* actions, int from);

#endif
