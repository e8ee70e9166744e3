/*
 * Force-included (-include) into every translation unit of Gloo's upstream test program by
 * scripts/gloo-upstream.sh. device.sed renames the tests' calls of
 * gloo::transport::tcp::CreateDevice(...) to ::glucx_upstream::CreateDevice(...), defined here:
 * it returns Gloo's own TCP device, or glucx's Gloo device when GLUCX_TEST_UPSTREAM_DEVICE=glucx.
 * One binary thus runs the same tests, under the same names, on either transport.
 *
 * This file is glucx's own code (no Gloo code): it only calls the two public factories.
 */
#ifndef GLUCX_UPSTREAM_DEVICE_H
#define GLUCX_UPSTREAM_DEVICE_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <gloo/transport/device.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>

#include <glucx/gloo.h>

namespace glucx_upstream
{

/* GLUCX_TEST_UPSTREAM_DEVICE: unset or "tcp" = Gloo's TCP transport, "glucx" = glucx. */
inline bool UseGlucx()
{
    static const bool glucx = [] {
        const char *d = std::getenv("GLUCX_TEST_UPSTREAM_DEVICE");
        if (d == nullptr || *d == '\0' || std::strcmp(d, "tcp") == 0)
            return false;
        if (std::strcmp(d, "glucx") == 0)
            return true;
        std::fprintf(stderr, "GLUCX_TEST_UPSTREAM_DEVICE=%s: expected tcp or glucx\n", d);
        std::exit(2);
    }();
    return glucx;
}

/* Same signature as gloo::transport::tcp::CreateDevice (a const char* host name converts to
 * the attr implicitly, as with Gloo's). For glucx, the attr's interface or host name chooses
 * the network device the way PyTorch's device creators do (traffic within the host is shared
 * memory either way). */
inline std::shared_ptr<::gloo::transport::Device>
CreateDevice(const ::gloo::transport::tcp::attr &a)
{
    if (!UseGlucx())
        return ::gloo::transport::tcp::CreateDevice(a);
    ::glucx::gloo::attr g;
    g.iface = a.iface;
    g.hostname = a.hostname;
    g.source = "Gloo's test";
    return ::glucx::gloo::CreateDevice(g);
}

} // namespace glucx_upstream

#endif
