/* libuv for the transfer engine (CSupport), found through pkg-config (libuv1-dev). */
#include <uv.h>
