/* Why: every rate and amount fmlp shows people goes through
 * fmlp_si_format, so its choice of prefix and digits is pinned here: four
 * significant digits, the prefix that puts the mantissa in [1, 1000), the
 * rounding edge that would print "1000", negatives, and non-finite values. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static void expect(double v, const char *unit, const char *want)
{
    char b[32];
    fmlp_si_format(v, unit, b, sizeof b);
    tu_check(strcmp(b, want) == 0, "%g %s -> \"%s\" (want \"%s\")", v, unit, b, want);
}

int main(void)
{
    expect(5.48104e13, "FLOP/s", "54.81 TFLOP/s");
    expect(4.255e12, "B/s", "4.255 TB/s");
    expect(394.7e9, "FLOP/s", "394.7 GFLOP/s");
    expect(1.07e15, "FLOP/s", "1.070 PFLOP/s");
    expect(3.2e20, "FLOP", "320000.0 PFLOP");
    expect(12582912, "B", "12.58 MB");
    expect(999.96e6, "B/s", "1.000 GB/s");
    expect(999.94, "B", "999.9 B");
    expect(0.5, "FLOP/s", "0.500 FLOP/s");
    expect(0, "B", "0.000 B");
    expect(-2.5e9, "B/s", "-2.500 GB/s");
    expect(INFINITY, "FLOP/s", "inf FLOP/s");
    expect(NAN, "B", "nan B");
    char small[6];
    tu_check(fmlp_si_format(123456.0, "FLOP/s", small, sizeof small) == small && strlen(small) == 5,
             "a short buffer is cut, not overrun (\"%s\")", small);
    return tu_finish();
}
