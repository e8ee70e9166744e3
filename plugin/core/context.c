/* glucx_context_*: one UCX context and the configuration read from the environment. */
#include <stdlib.h>

#include "core/core.h"
#include "util/error.h"
#include "util/fork.h"

glucx_status_t glucx_context_create(const glucx_context_params_t *params,
                                    glucx_context_t **context_p)
{
    if (context_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "context_create: NULL context_p");
    if (glucx_fork_tainted())
        return glucx_fork_refuse("context_create");
    glucx_context_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "context_create: out of memory");
    glucx_status_t st;
    /* counted from here: a fork while ucp_init runs taints the child as one after it */
    glucx_fork_context_enter();
    if (params != NULL && (params->field_mask & ~(uint64_t)GLUCX_CONTEXT_PARAM_NET_DEVICES)) {
        st = glucx_error(
            GLUCX_ERR_INVALID_ARG,
            "context_create: unknown field_mask bits 0x%llx (this glucx is %s)",
            (unsigned long long)(params->field_mask & ~(uint64_t)GLUCX_CONTEXT_PARAM_NET_DEVICES),
            glucx_version());
        goto err_free;
    }
    st = glucx_config_read(&ctx->config);
    if (st != GLUCX_OK)
        goto err_free;
    st = glucx_tune_parse(ctx->config.tune, &ctx->tune);
    if (st != GLUCX_OK)
        goto err_free;
    /* the link costs every communicator's selection uses: read the calibration file once */
    st = glucx_topo_create_uniform(1, 1, &ctx->costs);
    if (st == GLUCX_OK && ctx->config.calibration[0] != '\0')
        st = glucx_topo_calibration_load(ctx->costs, ctx->config.calibration);
    if (st == GLUCX_OK && ctx->config.topology[0] != '\0')
        st = glucx_net_load(ctx->config.topology, &ctx->net);
    if (st != GLUCX_OK)
        goto err_free;
    const char *net_devices = NULL;
    if (params != NULL && (params->field_mask & GLUCX_CONTEXT_PARAM_NET_DEVICES))
        net_devices = params->net_devices;
    st = glucx_tx_ucx_context_create(net_devices, ctx->config.keepalive_ms, &ctx->ucx);
    if (st == GLUCX_OK) {
        glucx_tx_ucx_context_set_spin(ctx->ucx, ctx->config.spin_us * 1000);
        glucx_tx_ucx_context_set_yield(ctx->ucx, (glucx_ucx_yield_t)ctx->config.yield);
        glucx_tx_ucx_context_set_hold(ctx->ucx, ctx->config.window_hold);
        if (ctx->config.net_seg != SIZE_MAX) /* within its range: glucx_config_read checked */
            (void)glucx_tx_ucx_context_set_net_seg(ctx->ucx, ctx->config.net_seg, 0);
    }
    if (st != GLUCX_OK)
        goto err_free;
    *context_p = ctx;
    return GLUCX_OK;

err_free:
    glucx_topo_destroy(ctx->costs);
    glucx_net_destroy(ctx->net);
    free(ctx);
    glucx_fork_context_leave();
    return st;
}

void glucx_context_destroy(glucx_context_t *context)
{
    if (context == NULL)
        return;
    if (glucx_fork_tainted()) { /* the parent's: no UCX call on it (util/fork.h) */
        glucx_fork_retain(context);
        return;
    }
    glucx_tx_ucx_context_destroy(context->ucx);
    glucx_topo_destroy(context->costs);
    glucx_net_destroy(context->net);
    free(context);
    glucx_fork_context_leave();
}
