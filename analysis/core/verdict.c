/*
 * The verdict (METRICS.md, "Verdict"): that the run failed, when the trace shows it did
 * (failures.c); else the one bottleneck that costs the most per iteration, tried in order
 * (straggler, schedule decisions, exposed communication and its link, compute, idle), as a
 * sentence and as (kind, subject, cost, share). Runs once every analyzer is done.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "model.h"

/* A failed run: its verdict says when it failed and what its first error was, and no more: a
 * bottleneck measured on iterations the failure cut short would be meaningless. 1 if failed. */
static int failed_sentence(glucx_an_engine_t *e)
{
    verdict_st_t *v = &e->vd;
    int64_t ts;
    const fail_ev_t *f;
    if (!glucx_an_failed(e, &ts, &f))
        return 0;
    v->kind = "failed";
    v->fail = f;
    v->fail_event = f == &e->fail.error ? "error" : "coll_end";
    v->fail_ns = ts - e->t_first;
    /* a rank number alone is ambiguous when the trace has several communicators */
    const comm_st_t *c = NULL;
    for (size_t i = 0; i < e->ncomms && e->ncomms > 1; i++)
        if (e->comms[i]->id == f->comm_id)
            c = e->comms[i];
    char hex[24];
    if (c)
        snprintf(v->subject, sizeof(v->subject), "rank %d of comm %s", f->rank,
                 c->name && *c->name ? c->name : glucx_an_comm_hex(c->id, hex));
    else
        snprintf(v->subject, sizeof(v->subject), "rank %d", f->rank);
    char when[32];
    glucx_an_fmt_ns((double)v->fail_ns, when, sizeof(when));
    if (f == &e->fail.error) {
        /* the error's own text, without a final full stop: the sentence adds one */
        size_t n = strlen(f->text);
        while (n > 0 && (f->text[n - 1] == '.' || isspace((unsigned char)f->text[n - 1])))
            n--;
        snprintf(e->verdict, sizeof(e->verdict), "The run failed at %s: %s reported %s%s%.*s.",
                 when, v->subject, glucx_an_status_name(f->status), n ? ": " : "", (int)n, f->text);
    } else {
        snprintf(e->verdict, sizeof(e->verdict),
                 "The run failed at %s: %s ended %s seq %" PRIu32 " with %s.", when, v->subject,
                 glucx_an_coll_name(f->coll), f->seq, glucx_an_status_name(f->status));
    }
    return 1;
}

void glucx_an_verdict(glucx_an_engine_t *e)
{
    char b1[32], b2[32], b3[32];
    verdict_st_t *v = &e->vd;
    v->kind = "none";
    v->plink = NULL;
    v->plink_comm = 0;
    v->subject[0] = 0;
    v->cost_ns = 0;
    double n_it = (double)e->iterations;
    double mean_it = n_it > 0 ? (double)e->iter_time_sum / n_it : 0;
    double rank_time = (double)e->tot.duration;
    v->fail = NULL;
    if (failed_sentence(e))
        goto out;
    if (e->iterations == 0 || mean_it <= 0 || rank_time <= 0) {
        snprintf(e->verdict, sizeof(e->verdict), "No iteration could be measured: %s.",
                 e->events == 0 ? "the trace has no glucx events"
                                : "the trace has no collective, communication or iteration events "
                                  "with a duration");
        goto out;
    }
    double exposed_sh = (double)(e->tot.comm - e->tot.overlap) / rank_time;
    double compute_sh = (double)e->tot.compute / rank_time;
    double idle_sh = (double)e->tot.idle / rank_time;
    /* top straggler and the link with most critical-path time */
    rank_st_t *top = NULL;
    int top_rank = -1;
    link_st_t *tl = NULL;
    plink_st_t *pl = NULL; /* the physical link with most critical-path time */
    uint64_t pl_comm = 0;
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        for (int r = 0; r < c->nalloc; r++)
            if (c->ranks[r].seen && (!top || c->ranks[r].lateness > top->lateness)) {
                top = &c->ranks[r];
                top_rank = r;
            }
        for (size_t k = 0; k < c->nlinks; k++)
            if (!tl || c->links[k]->cp_ns > tl->cp_ns)
                tl = c->links[k];
        for (size_t k = 0; k < c->nplinks; k++) {
            /* most critical-path time; ties: more bytes, then the lower id */
            const plink_st_t *x = c->plinks[k];
            if (x->cp_ns <= 0)
                continue;
            if (!pl || x->cp_ns > pl->cp_ns ||
                (x->cp_ns == pl->cp_ns &&
                 (x->bytes > pl->bytes || (x->bytes == pl->bytes && x->id < pl->id)))) {
                pl = c->plinks[k];
                pl_comm = c->id;
            }
        }
    }
    double strag = top ? (double)top->lateness / n_it : 0;
    double exposed = exposed_sh * mean_it;
    /* the algorithm choices' savings only: a priority decision has none (its options are
     * other collectives' chunks, METRICS.md) and is never named through a saving */
    double dec = (double)e->dec_saving / n_it;
    /* a plan's decision (order, partition) holds for every iteration of the plan: its saving
     * is per iteration; the plan kind with the largest one */
    const glucx_an_sched_kind_t *ord_k = &e->sched[GLUCX_AN_DECISION_ORDER];
    if (e->sched[GLUCX_AN_DECISION_PARTITION].saving_max > ord_k->saving_max)
        ord_k = &e->sched[GLUCX_AN_DECISION_PARTITION];
    double ord = (double)ord_k->saving_max;
    double link_cp = tl ? (double)tl->cp_ns / n_it : 0;
    double plink_cp = pl ? (double)pl->cp_ns / n_it : 0;
    /* a rank behind a slow link starts each collective late because the last one's data came
     * over that link: when the busiest physical link holds more critical-path time than the
     * lateness, the lateness is that link's doing and the link (rule 3) is the larger cost */
    if (strag >= 0.05 * mean_it && strag >= 0.5 * exposed && !(pl && plink_cp > strag)) {
        v->kind = "straggler";
        snprintf(v->subject, sizeof(v->subject), "rank %d", top_rank);
        v->cost_ns = strag;
        snprintf(e->verdict, sizeof(e->verdict),
                 "Rank %d is the straggler: the other ranks wait %s for it in each iteration, "
                 "%.0f%% of the %s iteration.",
                 top_rank, glucx_an_fmt_ns(strag, b1, sizeof(b1)), 100 * strag / mean_it,
                 glucx_an_fmt_ns(mean_it, b2, sizeof(b2)));
    } else if (ord >= 0.05 * mean_it || dec >= 0.05 * mean_it) {
        /* the larger of a plan decision's per-iteration saving and the algorithm choices' */
        const int plan = ord > dec;
        v->kind = "decision";
        snprintf(v->subject, sizeof(v->subject), "%s", plan ? ord_k->subject : e->dec_subject);
        v->cost_ns = plan ? ord : dec;
        char what[64] = "";
        if (plan)
            snprintf(what, sizeof(what), "The gradient partitions' %s costs",
                     ord_k == &e->sched[GLUCX_AN_DECISION_ORDER] ? "order" : "partitioning");
        snprintf(e->verdict, sizeof(e->verdict),
                 "%s %s per iteration (%.0f%% of the %s iteration%s); the largest: %s.",
                 plan ? what : "Algorithm choices cost",
                 glucx_an_fmt_ns(v->cost_ns, b1, sizeof(b1)), 100 * v->cost_ns / mean_it,
                 glucx_an_fmt_ns(mean_it, b2, sizeof(b2)), plan ? ", predicted" : "", v->subject);
    } else if (exposed_sh >= 0.10) {
        v->cost_ns = exposed;
        if (pl && plink_cp >= 0.3 * exposed) {
            /* the physical link: a rank pair's transfers all cross it, and so may others' */
            v->kind = "link";
            v->plink = pl;
            v->plink_comm = pl_comm;
            char ends[96], eff[64] = "";
            glucx_an_plink_ends(pl, ends, sizeof(ends));
            snprintf(v->subject, sizeof(v->subject), "physical link %d (dimension %d, %s)",
                     (int)pl->id, (int)pl->dim, ends);
            /* per direction: the busier direction's share of the nominal bandwidth per
             * direction (METRICS.md, "Physical links") */
            double of = glucx_an_plink_of_nominal(pl, NULL);
            if (!isnan(of) && of > 0)
                snprintf(eff, sizeof(eff), " at %.0f%% of its nominal bandwidth", 100 * of);
            snprintf(e->verdict, sizeof(e->verdict),
                     "Communication is exposed for %s per iteration (%.0f%% of the %s "
                     "iteration); physical link %d (dimension %d, %s) carries %s of it on the "
                     "critical path%s.",
                     glucx_an_fmt_ns(exposed, b1, sizeof(b1)), 100 * exposed_sh,
                     glucx_an_fmt_ns(mean_it, b2, sizeof(b2)), (int)pl->id, (int)pl->dim, ends,
                     glucx_an_fmt_ns(plink_cp, b3, sizeof(b3)), eff);
        } else if (!pl && tl && link_cp >= 0.3 * exposed) {
            v->kind = "link";
            snprintf(v->subject, sizeof(v->subject), "link %d->%d", tl->src, tl->dst);
            double ach = tl->busy_ns > 0 ? (double)tl->bytes / (double)tl->busy_ns * 1e9 : 0;
            char eff[64] = "";
            if (tl->bw > 0 && ach > 0)
                snprintf(eff, sizeof(eff), " at %.0f%% of its nominal bandwidth",
                         100 * ach / tl->bw);
            snprintf(e->verdict, sizeof(e->verdict),
                     "Communication is exposed for %s per iteration (%.0f%% of the %s "
                     "iteration); link %d->%d (dimension %d) carries %s of it on the critical "
                     "path%s.",
                     glucx_an_fmt_ns(exposed, b1, sizeof(b1)), 100 * exposed_sh,
                     glucx_an_fmt_ns(mean_it, b2, sizeof(b2)), tl->src, tl->dst, tl->dim,
                     glucx_an_fmt_ns(link_cp, b3, sizeof(b3)), eff);
        } else {
            v->kind = "exposed_communication";
            snprintf(v->subject, sizeof(v->subject), "communication");
            snprintf(e->verdict, sizeof(e->verdict),
                     "Exposed communication costs %s per iteration, %.0f%% of the %s iteration "
                     "(%.0f%% of communication is hidden under compute).",
                     glucx_an_fmt_ns(exposed, b1, sizeof(b1)), 100 * exposed_sh,
                     glucx_an_fmt_ns(mean_it, b2, sizeof(b2)),
                     e->tot.comm > 0 ? 100.0 * (double)e->tot.overlap / (double)e->tot.comm : 0.0);
        }
    } else if (compute_sh >= 0.5) {
        v->kind = "compute";
        snprintf(v->subject, sizeof(v->subject), "compute");
        v->cost_ns = compute_sh * mean_it;
        snprintf(e->verdict, sizeof(e->verdict),
                 "Compute-bound: compute takes %.0f%% of each rank's time; exposed communication "
                 "costs only %s per iteration (%.0f%% of the %s iteration).",
                 100 * compute_sh, glucx_an_fmt_ns(exposed, b1, sizeof(b1)), 100 * exposed_sh,
                 glucx_an_fmt_ns(mean_it, b2, sizeof(b2)));
    } else if (idle_sh >= 0.3) {
        v->kind = "idle";
        snprintf(v->subject, sizeof(v->subject), "idle");
        v->cost_ns = idle_sh * mean_it;
        snprintf(e->verdict, sizeof(e->verdict),
                 "Ranks are idle (neither computing nor communicating as traced) %.0f%% of the "
                 "%s iteration: the time goes to untraced work.",
                 100 * idle_sh, glucx_an_fmt_ns(mean_it, b1, sizeof(b1)));
    } else {
        snprintf(e->verdict, sizeof(e->verdict),
                 "No single bottleneck: per %s iteration, compute %.0f%%, exposed communication "
                 "%.0f%%, idle %.0f%%.",
                 glucx_an_fmt_ns(mean_it, b1, sizeof(b1)), 100 * compute_sh, 100 * exposed_sh,
                 100 * idle_sh);
    }
out:
    if (e->partial.n) {
        size_t l = strlen(e->verdict);
        snprintf(e->verdict + l, sizeof(e->verdict) - l, " (Partial report: %s.)", e->partial.v[0]);
    }
    v->share = mean_it > 0 ? v->cost_ns / mean_it : 0;
}
