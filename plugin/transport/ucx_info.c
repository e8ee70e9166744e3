#include "transport/ucx_info.h"

#include <stdio.h>
#include <ucp/api/ucp.h>

void glucx_tx_ucx_version(char *buf, size_t len)
{
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    snprintf(buf, len, "headers %d.%d, library %u.%u.%u", UCP_API_MAJOR, UCP_API_MINOR, major,
             minor, release);
}
