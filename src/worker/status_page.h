// The status page every worker serves at GET / (and /ui): one HTML page with
// its own small script, nothing fetched from anywhere else, showing the
// cluster as this worker sees it. It carries the cluster's status document
// (client/status_document.h) it was rendered with, draws it at once, and then
// refreshes itself every few seconds from GET /v1/cluster/status (the same
// document `shoal status --json` prints), keeping a few minutes of hit ratio
// and throughput for its chart.
//
// The document's strings come from the network (worker errors, addresses):
// the page embeds it as JSON with every '<', '>' and '&' escaped, and the
// script writes text only through textContent, never as markup.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace shoal {

// The page, for the worker at `self` (host:port), with `doc` drawn first.
std::string StatusPageHtml(const nlohmann::json& doc, std::string_view self);

// `doc` as JSON that may stand inside <script> (no "</script>" can end it).
std::string JsonForScript(const nlohmann::json& doc);

}  // namespace shoal
