#include "support/timescale.h"

#include <stdio.h>
#include <stdlib.h>

double glucx_test_time_scale(void)
{
    static double scale = 0; /* racy first read is benign: every thread computes the same */
    if (scale == 0) {
        double v = 1;
        const char *env = getenv("GLUCX_TEST_TIME_SCALE");
        if (env != NULL && *env != '\0') {
            char *end;
            double x = strtod(env, &end);
            if (*end == '\0' && x > 0 && x < 1000)
                v = x;
            else
                fprintf(stderr,
                        "GLUCX_TEST_TIME_SCALE=%s: expected a number in (0, 1000); using 1\n", env);
        }
        scale = v;
    }
    return scale;
}

int64_t glucx_test_ms(int64_t base_ms)
{
    double ms = (double)base_ms * glucx_test_time_scale();
    return ms < 1 ? 1 : (int64_t)ms;
}
