// `autoresearchd plot`: the progress chart without a browser, drawn by gnuplot
// (Debian's gnuplot-nox, run as a child): every experiment with a value of the
// metric as a point coloured by status, the kept ones as the best-so-far step
// line (the lowest so far, or the highest under `summary.goal = "max"`). The
// same chart as the dashboard's overview, as PNG (pngcairo) or SVG.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store/store.h"
#include "proposers/metric_goal.h"

namespace ard {

enum class PlotFormat { kPng, kSvg };

/// The format the file name's extension asks for (.png or .svg), else nullopt.
std::optional<PlotFormat> plot_format(const std::filesystem::path& out);

/// The gnuplot script that draws rows (oldest first) into output, x by
/// experiment number or by hours since the first start. Throws FatalError when
/// no row has a value.
std::string gnuplot_script(const std::vector<ExperimentRow>& rows, const std::string& tag, PlotFormat format,
                           const std::filesystem::path& output, bool by_time, const MetricSpec& metric = {});

/// Draws the tag's experiments into out: gnuplot writes a temporary file next
/// to it, which replaces out only when gnuplot succeeded. Throws FatalError
/// with gnuplot's own message when it fails, or when it is not installed.
void write_plot(Store& store, const std::string& tag, const std::filesystem::path& out, bool by_time,
                const MetricSpec& metric = {});

}  // namespace ard
