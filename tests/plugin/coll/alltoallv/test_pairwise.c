/* Tests of plugin/coll/alltoallv/pairwise.c on the fake transport. */
#include "plugin/coll/alltoallv/alltoallv_cases.h"
#include "coll/alltoallv/alltoallv.h"

int main(void)
{
    return av_run_tests("pairwise", GLUCX_ALLTOALLV_PAIRWISE, glucx_alltoallv_pairwise_cost);
}
