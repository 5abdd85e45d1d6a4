// The parts of libavahi-client lansync uses (Debian: libavahi-client-dev for the headers,
// libavahi-client3 at run time). Only LansyncDiscovery's AvahiDiscovery touches them.
//
// The libraries are not linked: they are loaded with dlopen the first time discovery starts
// (lansync_avahi_load), so that every command other than the node's starts without the twelve
// shared libraries libavahi-client brings with it (D-Bus, systemd, gcrypt, lz4, zstd...).
#ifndef LANSYNC_CAVAHI_H
#define LANSYNC_CAVAHI_H
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>

/// The functions lansync calls, each typed as the headers declare it, found in the loaded
/// libraries (a field is named for its function without the `avahi_` prefix).
typedef struct {
    __typeof__(&avahi_address_snprint) _Nonnull address_snprint;
    __typeof__(&avahi_alternative_service_name) _Nonnull alternative_service_name;
    __typeof__(&avahi_client_errno) _Nonnull client_errno;
    __typeof__(&avahi_client_free) _Nonnull client_free;
    __typeof__(&avahi_client_get_state) _Nonnull client_get_state;
    __typeof__(&avahi_client_new) _Nonnull client_new;
    __typeof__(&avahi_entry_group_add_service_strlst) _Nonnull entry_group_add_service_strlst;
    __typeof__(&avahi_entry_group_commit) _Nonnull entry_group_commit;
    __typeof__(&avahi_entry_group_is_empty) _Nonnull entry_group_is_empty;
    __typeof__(&avahi_entry_group_new) _Nonnull entry_group_new;
    __typeof__(&avahi_entry_group_reset) _Nonnull entry_group_reset;
    __typeof__(&avahi_free) _Nonnull free;
    __typeof__(&avahi_record_browser_free) _Nonnull record_browser_free;
    __typeof__(&avahi_record_browser_new) _Nonnull record_browser_new;
    __typeof__(&avahi_service_browser_new) _Nonnull service_browser_new;
    __typeof__(&avahi_service_resolver_free) _Nonnull service_resolver_free;
    __typeof__(&avahi_service_resolver_new) _Nonnull service_resolver_new;
    __typeof__(&avahi_strerror) _Nonnull strerror;
    __typeof__(&avahi_string_list_add) _Nonnull string_list_add;
    __typeof__(&avahi_string_list_free) _Nonnull string_list_free;
    __typeof__(&avahi_string_list_get_next) _Nonnull string_list_get_next;
    __typeof__(&avahi_string_list_get_pair) _Nonnull string_list_get_pair;
    __typeof__(&avahi_threaded_poll_free) _Nonnull threaded_poll_free;
    __typeof__(&avahi_threaded_poll_get) _Nonnull threaded_poll_get;
    __typeof__(&avahi_threaded_poll_lock) _Nonnull threaded_poll_lock;
    __typeof__(&avahi_threaded_poll_new) _Nonnull threaded_poll_new;
    __typeof__(&avahi_threaded_poll_start) _Nonnull threaded_poll_start;
    __typeof__(&avahi_threaded_poll_stop) _Nonnull threaded_poll_stop;
    __typeof__(&avahi_threaded_poll_unlock) _Nonnull threaded_poll_unlock;
} LansyncAvahi;

/// Loads libavahi-common and libavahi-client and finds every function of LansyncAvahi, once per
/// process (later calls return the first call's result). Returns NULL if a library or a function
/// is missing, with `*problem` set to a sentence saying which (static storage).
const LansyncAvahi *_Nullable lansync_avahi_load(const char *_Nullable *_Nonnull problem);

#endif
