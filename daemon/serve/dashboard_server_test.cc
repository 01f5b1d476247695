// Tests of the dashboard server over real loopback HTTP (a Beast client):
// routes, security headers, the token (bearer, cookie, one-time login URL),
// the Host check, read-only by default, and the actions through a fake.
#include "daemon/serve/dashboard_server.h"

#include <gmock/gmock.h>

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/fatal_error.h"
#include "daemon/git_repo.h"
#include "daemon/store/store.h"
#include "testing/test_util.h"

namespace ard {
namespace {

namespace http = boost::beast::http;
using ::testing::HasSubstr;
using tcp = boost::asio::ip::tcp;

const std::string kToken = "0123456789abcdef-token";

struct Reply {
  int status = 0;
  std::string body;
  http::response<http::string_body> raw;
};

class FakeActions : public DashboardActions {
 public:
  std::string stop() override {
    ++stops;
    return stop_result;
  }
  std::string save_program(const std::string& content) override {
    saved.push_back(content);
    return "hash-of-it";
  }
  std::string add_idea(const std::string& text) override {
    ideas.push_back(text);
    return "idea 1 queued";
  }
  std::vector<std::string> ideas;
  int stops = 0;
  std::string stop_result = "asked the daemon (pid 1) to stop";
  std::vector<std::string> saved;
};

class DashboardServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_file(dir.path() / "chart.min.js", "/* Chart.js stand-in */");
    Store store(db().string());
    store.add_run("t", "autoresearch/t", std::string(40, '1'));
    int64_t id = store.create_experiment("t", true, std::string(40, '1'), "", "baseline", std::nullopt);
    store.set_proposal(id, "baseline");
  }
  void TearDown() override { stop(); }

  std::filesystem::path db() const { return dir.path() / "results.db"; }

  DashboardSettings settings(ServeConfig serve = {}) {
    serve.port = 0;
    return {serve, "t", db(), dir.path() / "daemon.pid", dir.path() / "chart.min.js"};
  }
  void start(DashboardSettings s, DashboardActions* actions = nullptr) {
    server = std::make_unique<DashboardServer>(io, std::move(s), actions);
    thread = std::thread([this] { io.run(); });
  }
  void stop() {
    io.stop();
    if (thread.joinable()) thread.join();
    server.reset();
  }

  Reply request(http::verb verb, const std::string& target, const std::map<std::string, std::string>& headers = {},
                const std::string& body = "") {
    boost::asio::io_context client_io;
    tcp::socket socket(client_io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), server->port()});
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(server->port()));
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(socket, req);
    boost::beast::flat_buffer buffer;
    Reply r;
    http::read(socket, buffer, r.raw);
    r.status = static_cast<int>(r.raw.result_int());
    r.body = r.raw.body();
    return r;
  }
  Reply get(const std::string& target, const std::map<std::string, std::string>& headers = {}) {
    return request(http::verb::get, target, headers);
  }

  testing::TempDir dir;
  boost::asio::io_context io;
  std::unique_ptr<DashboardServer> server;
  std::thread thread;
};

TEST_F(DashboardServerTest, ServesPagesChartAndApiWithSecurityHeaders) {
  start(settings());
  EXPECT_EQ(server->url(), "http://127.0.0.1:" + std::to_string(server->port()) + "/");
  Reply page = get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("data-page=\"overview\""));
  EXPECT_THAT(std::string(page.raw["Content-Security-Policy"]), HasSubstr("script-src 'self'"));
  EXPECT_EQ(page.raw["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(get("/chart.js").body, "/* Chart.js stand-in */");
  EXPECT_EQ(get("/experiment/1").status, 200);

  Reply status = get("/api/status");
  EXPECT_EQ(status.status, 200);
  EXPECT_EQ(status.raw[http::field::content_type], "application/json");
  auto doc = nlohmann::json::parse(status.body);
  EXPECT_EQ(doc["tag"], "t");
  EXPECT_EQ(doc["daemon"]["running"], false);
  EXPECT_EQ(nlohmann::json::parse(get("/api/experiments?since=0").body).size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(get("/api/experiments/1").body)["description"], "baseline");
  EXPECT_EQ(get("/api/programs").status, 200);

  EXPECT_EQ(get("/api/experiments?since=x").status, 400);
  EXPECT_EQ(get("/api/experiments/9").status, 404);
  EXPECT_EQ(get("/api/nothing").status, 404);
  EXPECT_EQ(get("/nothing").status, 404);
  EXPECT_EQ(request(http::verb::delete_, "/").status, 405);
}

TEST_F(DashboardServerTest, ReadOnlyByDefaultAndHostChecked) {
  FakeActions actions;
  start(settings(), &actions);
  Reply post = request(http::verb::post, "/api/stop", {{"X-Autoresearchd-Action", "1"}});
  EXPECT_EQ(post.status, 403);
  EXPECT_THAT(post.body, HasSubstr("read-only"));
  EXPECT_EQ(actions.stops, 0);
  // A page whose DNS name was rebound to 127.0.0.1 sends its own Host.
  Reply rebound = get("/api/status", {{"Host", "attacker.example:" + std::to_string(server->port())}});
  EXPECT_EQ(rebound.status, 403);
  EXPECT_EQ(get("/api/status", {{"Host", "localhost:" + std::to_string(server->port())}}).status, 200);
}

TEST_F(DashboardServerTest, MissingStoreIsAnErrorNotACrash) {
  std::filesystem::remove(db());
  start(settings());
  Reply r = get("/api/status");
  EXPECT_EQ(r.status, 503);
  EXPECT_THAT(r.body, HasSubstr("no results yet"));
  EXPECT_FALSE(std::filesystem::exists(db()));  // the server never creates it
  EXPECT_EQ(get("/").status, 200);
}

TEST_F(DashboardServerTest, TokenAsBearerOrCookieFromAOneTimeUrl) {
  ServeConfig serve;
  serve.token = kToken;
  start(settings(serve));
  EXPECT_EQ(get("/").status, 401);
  EXPECT_EQ(get("/api/status").status, 401);
  EXPECT_EQ(get("/api/status", {{"Authorization", "Bearer wrong-token-0123456"}}).status, 401);
  EXPECT_EQ(get("/api/status", {{"Authorization", "Bearer " + kToken}}).status, 200);
  EXPECT_EQ(get("/api/status", {{"Cookie", "a=b; ard_token=" + kToken}}).status, 200);
  // Any Host is fine with a token: the token is the protection.
  EXPECT_EQ(get("/api/status", {{"Authorization", "Bearer " + kToken}, {"Host", "box.lan:1"}}).status, 200);

  std::string url = server->url();
  auto at = url.find("/login?once=");
  ASSERT_NE(at, std::string::npos) << url;
  std::string login = url.substr(at);
  EXPECT_EQ(get("/login?once=wrong").status, 403);
  Reply first = get(login);
  EXPECT_EQ(first.status, 303);
  EXPECT_EQ(first.raw[http::field::location], "/");
  EXPECT_EQ(first.raw[http::field::set_cookie], "ard_token=" + kToken + "; Path=/; HttpOnly; SameSite=Strict");
  EXPECT_EQ(get(login).status, 403);  // once
}

TEST_F(DashboardServerTest, ActionsNeedTheTokenTheSettingAndTheHeader) {
  ServeConfig serve;
  serve.token = kToken;
  serve.allow_actions = true;
  FakeActions actions;
  start(settings(serve), &actions);
  std::map<std::string, std::string> auth = {{"Authorization", "Bearer " + kToken}};
  EXPECT_EQ(request(http::verb::post, "/api/stop", {{"X-Autoresearchd-Action", "1"}}).status, 401);
  EXPECT_EQ(request(http::verb::post, "/api/stop", auth).status, 403);  // a cross-site form
  EXPECT_EQ(actions.stops, 0);
  auth["X-Autoresearchd-Action"] = "1";
  Reply stop = request(http::verb::post, "/api/stop", auth);
  EXPECT_EQ(stop.status, 200);
  EXPECT_EQ(nlohmann::json::parse(stop.body)["result"], "asked the daemon (pid 1) to stop");
  EXPECT_EQ(actions.stops, 1);
  Reply save = request(http::verb::post, "/api/program", auth, "# new program\n");
  EXPECT_EQ(save.status, 200);
  EXPECT_EQ(actions.saved, std::vector<std::string>{"# new program\n"});
  Reply idea = request(http::verb::post, "/api/ideas", auth, "try rotary embeddings");
  EXPECT_EQ(idea.status, 200);
  EXPECT_EQ(actions.ideas, std::vector<std::string>{"try rotary embeddings"});
  actions.stop_result = "error: no daemon is running";
  Reply failed = request(http::verb::post, "/api/stop", auth);
  EXPECT_EQ(failed.status, 409);
  EXPECT_EQ(nlohmann::json::parse(failed.body)["error"], "no daemon is running");
  EXPECT_EQ(request(http::verb::post, "/api/other", auth).status, 404);
}

TEST_F(DashboardServerTest, RefusesUnsafeSettingsBeforeBinding) {
  ServeConfig open;
  open.bind = "0.0.0.0";
  try {
    DashboardServer s(io, settings(open), nullptr);
    FAIL() << "a non-loopback bind without a token was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("serve.token: required to serve on 0.0.0.0"));
  }
  DashboardSettings no_chart = settings();
  no_chart.chart_js = dir.path() / "absent.js";
  EXPECT_THROW(DashboardServer(io, no_chart, nullptr), FatalError);
}

TEST(DaemonActions, SaveProgramWritesTheFileAndStoresAVersion) {
  testing::TempDir dir;
  Config config;
  config.repo = dir.path();
  std::filesystem::create_directories(dir.path() / ".autoresearchd");
  { Store store((dir.path() / ".autoresearchd/results.db").string()); }
  auto actions = make_daemon_actions(config);
  std::string hash = actions->save_program("# edited in the browser\n");
  EXPECT_EQ(hash, blob_hash("# edited in the browser\n"));
  EXPECT_EQ(testing::read_file(dir.path() / "program.md"), "# edited in the browser\n");
  Store store((dir.path() / ".autoresearchd/results.db").string());
  EXPECT_EQ(store.program(hash), "# edited in the browser\n");
  EXPECT_THAT(actions->stop(), HasSubstr("error: no daemon is running"));
}

TEST(DaemonActions, AddIdeaQueuesItForTheTagOrSaysWhyNot) {
  testing::TempDir dir;
  Config config;
  config.repo = dir.path();
  config.tag = "t";
  auto actions = make_daemon_actions(config);
  EXPECT_EQ(actions->add_idea("  try rotary embeddings\n"), "idea 1 queued: the next proposal is asked to try it");
  EXPECT_THAT(actions->add_idea(" "), HasSubstr("error: an idea needs its text"));
  EXPECT_THAT(actions->add_idea(std::string(2001, 'x')), HasSubstr("error: the idea is 2001 bytes; at most 2000"));
  Store store((dir.path() / ".autoresearchd/results.db").string());
  const auto ideas = store.ideas("t");
  ASSERT_EQ(ideas.size(), 1u);
  EXPECT_EQ(ideas[0].text, "try rotary embeddings");
  EXPECT_EQ(ideas[0].source, "dashboard");
}

}  // namespace
}  // namespace ard
