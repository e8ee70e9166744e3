// Self-check of the device switch (scripts/gloo-upstream/device.h), run by
// scripts/gloo-upstream.sh before the suite: prints which transport the factory the tests call
// returns under the current GLUCX_TEST_UPSTREAM_DEVICE ("tcp" or "glucx") and the device's str().
// glucx's own code; built beside Gloo's test program with the same flags.
#include <iostream>

int main()
{
    auto dev = ::glucx_upstream::CreateDevice("localhost");
    if (!dev) {
        std::cerr << "selfcheck: no device\n";
        return 1;
    }
    const bool tcp = dynamic_cast<::gloo::transport::tcp::Device *>(dev.get()) != nullptr;
    std::cout << (tcp ? "tcp" : "glucx") << " " << dev->str() << "\n";
    return 0;
}
