/* Why: "54810.4 GFLOP/s" is hard to read and "0.000 GFLOP" says nothing;
 * every number fmlp shows to people (CLI summaries, plans, tables,
 * analyses, verdicts) takes the SI prefix that fits it, from this one
 * formatter. Files written for programs (trace JSON, bench JSON/CSV) keep
 * raw numbers. */
#include <math.h>
#include <stdio.h>

#include "fmlp.h"

const char *fmlp_si_format(double value, const char *unit, char *buf, size_t len)
{
    static const char prefixes[] = {' ', 'k', 'M', 'G', 'T', 'P'};
    if (!buf || !len) return buf;
    if (!unit) unit = "";
    double mag = fabs(value);
    int p = 0;
    while (isfinite(mag) && p + 1 < (int)sizeof prefixes && mag >= 999.95) {
        mag /= 1000.0;
        value /= 1000.0;
        p++;
    }
    /* Four significant digits; a non-finite value prints as C prints it. */
    const char *fmt = !isfinite(value) ? "%g %s%s" : mag >= 99.995 ? "%.1f %s%s" : mag >= 9.9995 ? "%.2f %s%s" : "%.3f %s%s";
    char prefix[2] = {prefixes[p], 0};
    snprintf(buf, len, fmt, value, p ? prefix : "", unit);
    return buf;
}
