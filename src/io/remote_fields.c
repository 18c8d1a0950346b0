/* io/remote_fields.c: the by-name tables of reel_remote_settings and
 * reel_remote_stats (reel_remote_settings_get_fields, reel_remote_stats_get_fields). */
#include "io/remote_fields.h"

#include <stddef.h>

#define SETTING(n, t, m) { n, t, offsetof(reel_remote_settings, m) },
static const reel_field k_settings[] = { REEL__REMOTE_SETTINGS_FIELDS(SETTING) };
#undef SETTING

#define STAT(n, t, m) { n, t, offsetof(reel_remote_stats, m) },
static const reel_field k_stats[] = { REEL__REMOTE_STATS_FIELDS(STAT) };
#undef STAT

const reel_field *reel_remote_settings_get_fields(size_t *count)
{
    if (count) *count = sizeof k_settings / sizeof k_settings[0];
    return k_settings;
}

const reel_field *reel_remote_stats_get_fields(size_t *count)
{
    if (count) *count = sizeof k_stats / sizeof k_stats[0];
    return k_stats;
}
