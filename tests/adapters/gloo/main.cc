/*
 * Entry point of the Gloo conformance suite: a rank child (process mode, see harness.h) runs its
 * rank body and exits without touching GoogleTest; otherwise GoogleTest runs the tests.
 */
#include <gtest/gtest.h>

#include "harness.h"

int main(int argc, char **argv)
{
    int child = glucx_test::ChildMain(argc, argv);
    if (child >= 0)
        return child;
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
