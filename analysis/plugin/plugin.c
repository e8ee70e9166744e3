/* The glucx Babeltrace 2 plugin: declarations only (component classes live in their folders). */
#include <babeltrace2/babeltrace.h>

#include "report/sink.h"

BT_PLUGIN_MODULE();
BT_PLUGIN(glucx);
BT_PLUGIN_DESCRIPTION("glucx trace analysis: per-iteration, per-link and per-decision attribution");
BT_PLUGIN_AUTHOR("glucx");
BT_PLUGIN_LICENSE("See the glucx repository");

BT_PLUGIN_SINK_COMPONENT_CLASS(report, glucx_an_sink_consume);
BT_PLUGIN_SINK_COMPONENT_CLASS_DESCRIPTION(
    report,
    "Analyse glucx events: write report.json, report.txt, timeline.json and report.html into the "
    "directory given by the parameter output");
BT_PLUGIN_SINK_COMPONENT_CLASS_HELP(
    report,
    "Parameters: output (string, required), timeline (bool, default true), template (string), "
    "pid-file (string: glucx-trace's DIR/glucx-pids; events of processes it does not list are "
    "left out). Definitions: analysis/METRICS.md.");
BT_PLUGIN_SINK_COMPONENT_CLASS_INITIALIZE_METHOD(report, glucx_an_sink_init);
BT_PLUGIN_SINK_COMPONENT_CLASS_FINALIZE_METHOD(report, glucx_an_sink_finalize);
BT_PLUGIN_SINK_COMPONENT_CLASS_GRAPH_IS_CONFIGURED_METHOD(report,
                                                          glucx_an_sink_graph_is_configured);
