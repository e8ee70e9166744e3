/* The algorithm table of every collective kind, indexed by glucx_coll_t. */
#include "coll/coll.h"

const glucx_coll_table_t *const glucx_coll_tables[GLUCX_COLL_COUNT] = {
#define GLUCX_COLL_TABLE_REF_(name, lname) [GLUCX_COLL_##name] = &glucx_##lname##_table,
    GLUCX_COLL_MAP(GLUCX_COLL_TABLE_REF_)
#undef GLUCX_COLL_TABLE_REF_
};
