#define _GNU_SOURCE
#include <spawn.h>

#include "courier_spawn.h"

int courier_spawn_close_from(void* actions, int from) {
  return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
