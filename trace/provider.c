/* The probe library libglucx-trace-provider.so: the `glucx` LTTng-UST tracepoint provider
 * (events in include/glucx_tp/provider.h, documented in EVENTS.md). It links liblttng-ust and is
 * loaded only when tracing is requested: LD_PRELOAD (glucx-trace record) or dlopen
 * (GLUCX_TRACE=1, see plugin/util/tracepoint.h). Never dlclose it while tracing. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "glucx_tp/provider.h"

/* Marker looked up with dlsym() by libglucx (glucx_tp_provider_loaded()) so it never loads the
 * probes twice. Its value is the version of the event set: bump it with any change of
 * EVENTS.md. */
__attribute__((visibility("default"))) const int glucx_tp_provider_abi = 1;
