// The dashboard's pages and static files: daemon/serve/dashboard/*.{html,js,css},
// compiled into the binary (generated dashboard_assets.h), found by URL path.
// The pages are static: they hold no data and fetch everything from the API.
#pragma once

#include <optional>
#include <string_view>

namespace ard {

struct PageAsset {
  std::string_view content_type;
  std::string_view body;
};

/// The asset a GET of path serves: "/" (overview), "/experiment/<id>",
/// "/programs", "/app.js", "/app.css"; nullopt for anything else.
std::optional<PageAsset> find_asset(std::string_view path);

}  // namespace ard
