/* libcurl for the transfer engine (CSupport), found through pkg-config (libcurl4-openssl-dev). */
#include <curl/curl.h>
