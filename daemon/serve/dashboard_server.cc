// See dashboard_server.h. One Session per connection reads a request, routes
// it (handle), writes the response and reads the next while the client keeps
// the connection alive. Everything runs on the io_context's thread.
#include "daemon/serve/dashboard_server.h"

#include <signal.h>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

#include "daemon/fatal_error.h"
#include "daemon/git_repo.h"
#include "daemon/serve/dashboard_api.h"
#include "daemon/serve/dashboard_pages.h"
#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"
#include "daemon/util/clock.h"
#include "daemon/util/file.h"

namespace ard {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

namespace {

constexpr const char* kCookie = "ard_token";
constexpr const char* kActionHeader = "X-Autoresearchd-Action";

// Scripts and styles come only from this server; nothing may frame the pages.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string random_hex(size_t bytes) {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!in.read(raw.data(), static_cast<std::streamsize>(bytes))) throw FatalError("cannot read /dev/urandom");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

/// Compares without an early exit, so response times do not leak the token.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

/// The value of one cookie in a Cookie header, or empty.
std::string cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    size_t end = header.find(';');
    std::string_view part = header.substr(0, end);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > name.size() && part.substr(0, name.size()) == name && part[name.size()] == '=')
      return std::string(part.substr(name.size() + 1));
    if (end == std::string_view::npos) break;
    header.remove_prefix(end + 1);
  }
  return {};
}

/// The value of key in a query string, or nullopt.
std::optional<std::string> query_value(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    size_t end = query.find('&');
    std::string_view part = query.substr(0, end);
    if (part.size() > key.size() && part.substr(0, key.size()) == key && part[key.size()] == '=')
      return std::string(part.substr(key.size() + 1));
    if (end == std::string_view::npos) break;
    query.remove_prefix(end + 1);
  }
  return std::nullopt;
}

std::optional<int64_t> parse_id(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

class RealActions : public DashboardActions {
 public:
  explicit RealActions(const Config& c) : config_(c) {}

  std::string stop() override {
    StateDir state(config_.repo);
    auto pid = running_daemon(state.pid_file());
    if (!pid || *pid <= 0) return "error: no daemon is running";
    if (kill(*pid, SIGTERM) != 0) return "error: cannot signal pid " + std::to_string(*pid);
    return "asked the daemon (pid " + std::to_string(*pid) + ") to stop";
  }

  std::string save_program(const std::string& content) override {
    std::filesystem::path path = config_.repo / config_.program;
    std::filesystem::path tmp = path;
    tmp += ".autoresearchd-tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!(out << content) || !out.flush()) return "error: cannot write " + tmp.string();
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) return "error: cannot replace " + path.string() + ": " + ec.message();
    std::string hash = blob_hash(content);
    StateDir state(config_.repo);
    if (std::filesystem::exists(state.db())) Store(state.db().string()).put_program(hash, content);
    return hash;
  }

  std::string add_idea(const std::string& text) override {
    std::string idea;
    try {
      idea = checked_idea_text(text);
    } catch (const std::invalid_argument& e) {
      return std::string("error: ") + e.what();
    }
    StateDir state(config_.repo);
    state.create();
    const int64_t id = Store(state.db().string()).add_idea(config_.tag, idea, "dashboard");
    return "idea " + std::to_string(id) + " queued: the next proposal is asked to try it";
  }

 private:
  Config config_;
};

}  // namespace

std::unique_ptr<DashboardActions> make_daemon_actions(const Config& config) {
  return std::make_unique<RealActions>(config);
}

struct DashboardServer::State {
  DashboardSettings settings;
  DashboardActions* actions = nullptr;
  std::string chart_js;
  std::string login_nonce;  ///< empty once used, or without a token
  tcp::acceptor acceptor;
  bool closed = false;
  unsigned short port = 0;

  State(asio::io_context& io) : acceptor(io) {}

  Response reply(const Request& req, http::status st, std::string_view type, std::string body) {
    Response res{st, req.version()};
    res.set(http::field::server, "autoresearchd");
    res.set(http::field::content_type, type);
    res.set(http::field::cache_control, "no-store");
    res.set("X-Content-Type-Options", "nosniff");
    res.set("Referrer-Policy", "no-referrer");
    res.set("Content-Security-Policy", kContentSecurityPolicy);
    res.keep_alive(req.keep_alive());
    res.body() = req.method() == http::verb::head ? std::string() : std::move(body);
    res.prepare_payload();
    return res;
  }
  Response json_reply(const Request& req, http::status st, const nlohmann::json& doc) {
    return reply(req, st, "application/json", doc.dump());
  }
  Response error(const Request& req, http::status st, const std::string& message) {
    return json_reply(req, st, {{"error", message}});
  }

  bool authorized(const Request& req) const {
    const std::string& token = settings.serve.token;
    if (token.empty()) return true;
    std::string_view auth = req[http::field::authorization];
    if (auth.substr(0, 7) == "Bearer " && same_secret(auth.substr(7), token)) return true;
    return same_secret(cookie_value(req[http::field::cookie], kCookie), token);
  }

  /// Without a token the loopback bind is the only protection: refuse a Host
  /// that a DNS-rebound page would send.
  bool host_allowed(const Request& req) const {
    if (!settings.serve.token.empty()) return true;
    std::string_view host = req[http::field::host];
    std::string port_suffix = ":" + std::to_string(port);
    for (std::string name : {std::string("127.0.0.1"), std::string("localhost"), std::string("[::1]"),
                             settings.serve.bind})
      if (host == name + port_suffix || host == name) return true;
    return false;
  }

  DashboardView view() const {
    return {settings.tag, running_daemon(settings.pid_file), settings.serve.allow_actions, settings.noise,
            settings.metric, settings.ladder};
  }

  Response handle(const Request& req) {
    std::string_view target = req.target();
    size_t q = target.find('?');
    std::string_view path = target.substr(0, q);
    std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    bool read = req.method() == http::verb::get || req.method() == http::verb::head;

    if (!host_allowed(req)) return error(req, http::status::forbidden, "unexpected Host header");
    if (path == "/login" && read) return login(req, query);
    if (!authorized(req))
      return error(req, http::status::unauthorized,
                   "a token is required: send Authorization: Bearer <serve.token> or open the login URL");

    if (req.method() == http::verb::post) return action(req, path);
    if (!read) return error(req, http::status::method_not_allowed, "only GET, HEAD and POST");
    if (path == "/chart.js") return reply(req, http::status::ok, "application/javascript", chart_js);
    if (path.substr(0, 5) == "/api/") {
      try {
        return api(req, path, query);
      } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, e.what());
      }
    }
    if (auto page = find_asset(path)) return reply(req, http::status::ok, page->content_type, std::string(page->body));
    return error(req, http::status::not_found, "no such page");
  }

  Response login(const Request& req, std::string_view query) {
    auto once = query_value(query, "once");
    if (settings.serve.token.empty() || login_nonce.empty() || !once || !same_secret(*once, login_nonce))
      return error(req, http::status::forbidden, "this login URL is not valid (each one works once)");
    login_nonce.clear();
    Response res = reply(req, http::status::see_other, "text/plain", "");
    res.set(http::field::location, "/");
    res.set(http::field::set_cookie,
            std::string(kCookie) + "=" + settings.serve.token + "; Path=/; HttpOnly; SameSite=Strict");
    return res;
  }

  Response api(const Request& req, std::string_view path, std::string_view query) {
    if (!std::filesystem::exists(settings.db))
      return error(req, http::status::service_unavailable, "no results yet: " + settings.db.string() + " does not exist");
    auto store = Store::open_read_only(settings.db.string());
    if (path == "/api/status") return json_reply(req, http::status::ok, api_status(*store, view(), now_seconds()));
    if (path == "/api/programs") return json_reply(req, http::status::ok, api_programs(*store, view()));
    if (path == "/api/experiments") {
      int64_t since = 0;
      if (auto s = query_value(query, "since")) {
        auto id = parse_id(*s);
        if (!id) return error(req, http::status::bad_request, "since: expected an experiment id");
        since = *id;
      }
      return json_reply(req, http::status::ok, api_experiments(*store, view(), since));
    }
    if (path.substr(0, 17) == "/api/experiments/") {
      auto id = parse_id(path.substr(17));
      if (!id) return error(req, http::status::bad_request, "expected /api/experiments/<id>");
      auto doc = api_experiment(*store, *id, settings.ladder);
      if (!doc) return error(req, http::status::not_found, "no experiment #" + std::to_string(*id));
      return json_reply(req, http::status::ok, *doc);
    }
    return error(req, http::status::not_found, "no such API path");
  }

  Response action(const Request& req, std::string_view path) {
    if (!settings.serve.allow_actions || !actions || settings.serve.token.empty())
      return error(req, http::status::forbidden, "read-only: set serve.allow_actions = true (and serve.token)");
    // A cross-site form cannot set a custom header; fetch from our pages does.
    if (req[kActionHeader] != "1") return error(req, http::status::forbidden, std::string("missing ") + kActionHeader);
    std::string result;
    if (path == "/api/stop") result = actions->stop();
    else if (path == "/api/program") result = actions->save_program(req.body());
    else if (path == "/api/ideas") result = actions->add_idea(req.body());
    else return error(req, http::status::not_found, "no such action");
    if (result.rfind("error: ", 0) == 0) return error(req, http::status::conflict, result.substr(7));
    return json_reply(req, http::status::ok, {{"result", result}});
  }
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<DashboardServer::State> state)
      : stream_(std::move(socket)), state_(std::move(state)) {}

  void read() {
    parser_.emplace();
    parser_->body_limit(1 << 20);  // a program.md edit is the largest body
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->shut();
      self->respond(self->parser_->release());
    });
  }

 private:
  void respond(Request req) {
    auto res = std::make_shared<Response>(state_->handle(req));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive()) return self->shut();
      self->read();
    });
  }
  void shut() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<DashboardServer::State> state_;
};

void accept(const std::shared_ptr<DashboardServer::State>& state) {
  state->acceptor.async_accept([state](beast::error_code ec, tcp::socket socket) {
    if (state->closed) return;
    if (!ec) std::make_shared<Session>(std::move(socket), state)->read();
    accept(state);
  });
}

}  // namespace

DashboardServer::DashboardServer(asio::io_context& io, DashboardSettings settings, DashboardActions* actions)
    : state_(std::make_shared<State>(io)) {
  validate_serve(settings.serve);
  state_->chart_js = read_file(settings.chart_js).value_or("");
  if (state_->chart_js.empty())
    throw FatalError("Chart.js not found at " + settings.chart_js.string() + " (install libjs-chart.js)");
  if (!settings.serve.token.empty()) state_->login_nonce = random_hex(16);
  state_->actions = actions;
  tcp::endpoint endpoint(asio::ip::make_address(settings.serve.bind), static_cast<unsigned short>(settings.serve.port));
  state_->settings = std::move(settings);
  auto& acc = state_->acceptor;
  beast::error_code ec;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw FatalError("cannot listen on " + state_->settings.serve.bind + ":" +
                     std::to_string(state_->settings.serve.port) + ": " + ec.message());
  state_->port = acc.local_endpoint().port();
  accept(state_);
}

DashboardServer::~DashboardServer() { close(); }

unsigned short DashboardServer::port() const { return state_->port; }

std::string DashboardServer::url() const {
  std::string host = state_->settings.serve.bind;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  std::string u = "http://" + host + ":" + std::to_string(port()) + "/";
  if (!state_->login_nonce.empty()) u += "login?once=" + state_->login_nonce;
  return u;
}

void DashboardServer::close() {
  if (state_->closed) return;
  state_->closed = true;
  beast::error_code ec;
  state_->acceptor.close(ec);
}

DashboardSettings dashboard_settings(const Config& config) {
  StateDir state(config.repo);
  DashboardSettings s{config.serve, config.tag, state.db(), state.pid_file()};
  s.noise = {config.noise.prior_sigma, config.noise.z};
  s.metric = {config.metric, config.goal};
  s.ladder = ladder_settings(config);
  return s;
}

}  // namespace ard
