#include <glucx/glucx.h>

const char *glucx_version(void)
{
    return GLUCX_VERSION_STRING;
}
