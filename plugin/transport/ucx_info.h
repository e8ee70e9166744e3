/** Internal: facts about the UCX library in use, for glucx-info. */
#ifndef GLUCX_TRANSPORT_UCX_INFO_H
#define GLUCX_TRANSPORT_UCX_INFO_H

#include <stddef.h>

/** Write "<headers MAJOR.MINOR> / <library MAJOR.MINOR.RELEASE>" into buf. */
void glucx_tx_ucx_version(char *buf, size_t len);

#endif
