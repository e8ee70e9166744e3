/* Tests of plugin/coll/alltoallv/linear.c on the fake transport. */
#include "plugin/coll/alltoallv/alltoallv_cases.h"
#include "coll/alltoallv/alltoallv.h"

int main(void)
{
    return av_run_tests("linear", GLUCX_ALLTOALLV_LINEAR, glucx_alltoallv_linear_cost);
}
