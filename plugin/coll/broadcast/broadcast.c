/* broadcast: algorithm table (rows added by the collectives work). */
#include "coll/coll.h"

const glucx_coll_table_t glucx_broadcast_table = {NULL, 0};
