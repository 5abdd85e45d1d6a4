#include "CAvahi.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static LansyncAvahi functions;
static const LansyncAvahi *loaded;
static char problem[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define FIND(library, name)                                                                          \
    do {                                                                                             \
        void *symbol = dlsym(library, "avahi_" #name);                                                \
        if (symbol == NULL) {                                                                        \
            snprintf(problem, sizeof problem, "libavahi-%s lacks avahi_%s: install Debian's libavahi-client3", \
                     #library, #name);                                                                \
            return;                                                                                   \
        }                                                                                            \
        *(void **)&functions.name = symbol;                                                           \
    } while (0)

static void load(void) {
    // The sonames Debian's libavahi-client3 installs; common first, since client needs it.
    void *common = dlopen("libavahi-common.so.3", RTLD_NOW | RTLD_GLOBAL);
    void *client = common ? dlopen("libavahi-client.so.3", RTLD_NOW) : NULL;
    if (client == NULL) {
        snprintf(problem, sizeof problem, "cannot load libavahi-client (%s): install Debian's libavahi-client3",
                 dlerror());
        return;
    }
    FIND(common, address_snprint);
    FIND(common, alternative_service_name);
    FIND(client, client_errno);
    FIND(client, client_free);
    FIND(client, client_get_state);
    FIND(client, client_new);
    FIND(client, entry_group_add_service_strlst);
    FIND(client, entry_group_commit);
    FIND(client, entry_group_is_empty);
    FIND(client, entry_group_new);
    FIND(client, entry_group_reset);
    FIND(common, free);
    FIND(client, record_browser_free);
    FIND(client, record_browser_new);
    FIND(client, service_browser_new);
    FIND(client, service_resolver_free);
    FIND(client, service_resolver_new);
    FIND(common, strerror);
    FIND(common, string_list_add);
    FIND(common, string_list_free);
    FIND(common, string_list_get_next);
    FIND(common, string_list_get_pair);
    FIND(common, threaded_poll_free);
    FIND(common, threaded_poll_get);
    FIND(common, threaded_poll_lock);
    FIND(common, threaded_poll_new);
    FIND(common, threaded_poll_start);
    FIND(common, threaded_poll_stop);
    FIND(common, threaded_poll_unlock);
    loaded = &functions;
}

const LansyncAvahi *lansync_avahi_load(const char **out) {
    pthread_once(&once, load);
    *out = loaded ? NULL : problem;
    return loaded;
}
