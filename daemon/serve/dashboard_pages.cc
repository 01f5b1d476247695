// See dashboard_pages.h.
#include "daemon/serve/dashboard_pages.h"

#include "daemon/dashboard_assets.h"  // generated from daemon/serve/dashboard/: kOverviewHtml, ...

namespace ard {

std::optional<PageAsset> find_asset(std::string_view path) {
  constexpr std::string_view html = "text/html; charset=utf-8";
  if (path == "/") return PageAsset{html, dashboard_assets::kOverviewHtml};
  if (path == "/programs") return PageAsset{html, dashboard_assets::kProgramsHtml};
  if (path == "/app.js") return PageAsset{"application/javascript; charset=utf-8", dashboard_assets::kAppJs};
  if (path == "/app.css") return PageAsset{"text/css; charset=utf-8", dashboard_assets::kAppCss};
  constexpr std::string_view experiment = "/experiment/";
  if (path.substr(0, experiment.size()) == experiment) {
    std::string_view id = path.substr(experiment.size());
    if (id.empty() || id.size() > 18 || id.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    return PageAsset{html, dashboard_assets::kExperimentHtml};
  }
  return std::nullopt;
}

}  // namespace ard
