# Points the device factory of Gloo's upstream tests at ::glucx_upstream::CreateDevice
# (scripts/gloo-upstream/device.h, force-included), which returns Gloo's TCP device or glucx's
# device by GLUCX_TEST_UPSTREAM_DEVICE. Applied by scripts/gloo-upstream.sh to a copy of gloo/test/
# in its work directory, never to files in the glucx tree. Every spelling of the call:
#   ::gloo::transport::tcp::CreateDevice(   gloo::transport::tcp::CreateDevice(
#   transport::tcp::CreateDevice(           tcp::CreateDevice(
s/\(::\)\{0,1\}\(gloo::\)\{0,1\}\(transport::\)\{0,1\}tcp::CreateDevice(/::glucx_upstream::CreateDevice(/g
