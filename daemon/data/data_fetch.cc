// See data_fetch.h. One file is a loop of transfers: each appends to the
// .part file from where it ends, until a transfer completes or a failure that
// another try cannot fix; then the whole .part is verified before the rename.
#include "daemon/data/data_fetch.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "daemon/fatal_error.h"
#include "daemon/util/text.h"

namespace ard {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string fixed1(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "--";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

/// The bar on a terminal, or a plain line every report_every_s seconds.
class ProgressReport {
 public:
  // Plain lines start one interval in: a short file gets only its "done" line.
  ProgressReport(const FetchOptions& o, std::string name)
      : o_(o), name_(std::move(name)), last_(o.tty ? Clock::time_point{} : Clock::now()) {}

  /// done and total count the whole file (total 0: unknown).
  void update(double done, double total, double rate) {
    if (!o_.progress) return;
    auto now = Clock::now();
    double since = std::chrono::duration<double>(now - last_).count();
    if (since < (o_.tty ? 0.2 : o_.report_every_s)) return;
    last_ = now;
    draw(done, total, rate, false);
  }
  void finish(double done, double seconds) {
    if (!o_.progress) return;
    double rate = seconds > 0 ? done / seconds : 0;
    draw(done, done, rate, true);
  }

 private:
  void draw(double done, double total, double rate, bool final) {
    std::ostream& out = *o_.progress;
    std::string size = human_bytes(done) + (total > 0 ? " of " + human_bytes(total) : "");
    std::string speed = human_bytes(rate) + "/s";
    std::string eta = total > 0 && rate > 0 ? duration_text((total - done) / rate) : "--";
    if (o_.tty) {
      constexpr int kWidth = 24;
      int filled = total > 0 ? static_cast<int>(kWidth * done / total) : 0;
      out << "\r\033[K" << name_ << " [" << std::string(static_cast<size_t>(filled), '#')
          << std::string(static_cast<size_t>(kWidth - filled), '.') << "] " << size << "  " << speed
          << (final ? "  done" : "  ETA " + eta) << (final ? "\n" : "") << std::flush;
    } else {
      out << "data fetch: " << name_ << ": " << size;
      if (total > 0 && !final) out << " (" << static_cast<int>(100 * done / total) << "%)";
      out << ", " << speed << (final ? ", done" : ", ETA " + eta) << "\n" << std::flush;
    }
  }

  const FetchOptions& o_;
  std::string name_;
  Clock::time_point last_{};
};

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

/// One transfer: appends the body to the .part file (libcurl refuses a 200
/// to a range request with CURLE_RANGE_ERROR), keeps the start of an error
/// body for the message.
struct Transfer {
  CURL* curl = nullptr;
  FILE* file = nullptr;
  curl_off_t offset = 0;     ///< bytes in the file when this transfer started
  long status = 0;
  std::string error_body;
  std::string write_error;   ///< errno text of a failed write
  ProgressReport* progress = nullptr;
  const std::atomic<bool>* stop = nullptr;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  if (t->status == 0) {
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
  }
  if (t->status >= 300) {
    if (t->error_body.size() < 300) t->error_body.append(data, std::min<size_t>(bytes, 300));
    return bytes;
  }
  if (fwrite(data, 1, bytes, t->file) != bytes) {
    t->write_error = strerror(errno);
    return 0;
  }
  return bytes;
}

int on_progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->stop && t->stop->load()) return 1;
  if (t->status == 0 || t->status >= 300) return 0;
  curl_off_t speed = 0;
  curl_easy_getinfo(t->curl, CURLINFO_SPEED_DOWNLOAD_T, &speed);
  double total = dltotal > 0 ? static_cast<double>(t->offset + dltotal) : 0;
  t->progress->update(static_cast<double>(t->offset + dlnow), total, static_cast<double>(speed));
  return 0;
}

std::string status_text(long status) {
  switch (status) {
    case 401: return "401 Unauthorized";
    case 403: return "403 Forbidden";
    case 404: return "404 Not Found";
    case 410: return "410 Gone";
    case 416: return "416 Range Not Satisfiable";
    case 429: return "429 Too Many Requests";
    case 500: return "500 Internal Server Error";
    case 502: return "502 Bad Gateway";
    case 503: return "503 Service Unavailable";
    case 504: return "504 Gateway Timeout";
    default: return std::to_string(status);
  }
}

/// What the user can do about a failure, by its kind.
const char* kNetworkFix =
    "check the network (or set https_proxy), then run `autoresearchd data fetch` again; or set data.train and "
    "data.val to local files";
const char* kSourceFix = "check the URL in the source list (data.sources), or point data.sources at a mirror";

struct TryResult {
  enum class Kind { kComplete, kRetry, kFail } kind = Kind::kFail;
  std::string error;
};

TryResult one_transfer(const std::string& url, const fs::path& part, const FetchOptions& o, ProgressReport& report) {
  global_init();
  std::unique_ptr<FILE, int (*)(FILE*)> file(fopen(part.c_str(), "ab"), fclose);
  if (!file) return {TryResult::Kind::kFail, part.string() + ": " + strerror(errno) + "; fix: check data.cache"};
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return {TryResult::Kind::kFail, "curl_easy_init failed"};
  Transfer t;
  t.curl = curl.get();
  t.file = file.get();
  t.offset = static_cast<curl_off_t>(ftell(file.get()));
  t.progress = &report;
  t.stop = o.stop;

  char error[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);  // mirrors and CDNs redirect
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  if (t.offset > 0) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, t.offset);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout_s * 1000));
  // A stall (under 1 byte/s for stall_timeout_s) ends the transfer; the next try resumes.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, std::lround(o.stall_timeout_s)));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "autoresearchd/0.1");

  CURLcode rc = curl_easy_perform(c);
  if (t.status == 0) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.status);
  bool flushed = fflush(file.get()) == 0 && fsync(fileno(file.get())) == 0;
  if (!t.write_error.empty() || !flushed)
    return {TryResult::Kind::kFail, part.string() + ": " + (t.write_error.empty() ? strerror(errno) : t.write_error) +
                                        "; fix: free space in data.cache or point it elsewhere"};
  if (rc == CURLE_ABORTED_BY_CALLBACK) return {TryResult::Kind::kFail, url + ": stopped"};
  if (rc == CURLE_RANGE_ERROR) {
    // The server answered the range with the whole file: start over from 0.
    if (ftruncate(fileno(file.get()), 0) != 0)
      return {TryResult::Kind::kFail, part.string() + ": " + strerror(errno)};
    return {TryResult::Kind::kRetry, url + ": the server cannot resume a download; starting it over"};
  }
  if (rc != CURLE_OK) {
    std::string what = flatten_to_one_line(error[0] ? error : curl_easy_strerror(rc));
    std::string line = url + ": curl error " + std::to_string(static_cast<int>(rc)) + ": " + what + "; fix: " +
                       kNetworkFix;
    // No name, no route, no listener: waiting seconds fixes none of them, so
    // they fail at once. Dropped and stalled transfers are tried again.
    bool hopeless = rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY ||
                    rc == CURLE_COULDNT_CONNECT || rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL ||
                    rc == CURLE_TOO_MANY_REDIRECTS;
    return {hopeless ? TryResult::Kind::kFail : TryResult::Kind::kRetry, line};
  }
  if (t.status == 416 && t.offset > 0) return {TryResult::Kind::kComplete, ""};  // the part already holds it all
  if (t.status >= 300) {
    std::string line = url + ": HTTP " + status_text(t.status);
    std::string body = flatten_to_one_line(t.error_body.substr(0, 120));
    if (!body.empty()) line += " (" + body + ")";
    bool transient = t.status == 429 || t.status >= 500;
    line += std::string("; fix: ") + (transient ? "the server is busy or failing; run the fetch again later, or "
                                                  "point data.sources at a mirror"
                                                : kSourceFix);
    return {transient ? TryResult::Kind::kRetry : TryResult::Kind::kFail, line};
  }
  return {TryResult::Kind::kComplete, ""};
}

fs::path stamp_path(const fs::path& dest) { return fs::path(dest.string() + ".verified"); }

std::string stamp_of(const fs::path& p) {
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) return "";
  return std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "\n";
}

void write_stamp(const fs::path& dest) {
  std::string stamp = stamp_of(dest);
  std::ofstream(stamp_path(dest), std::ios::binary | std::ios::trunc) << stamp;
}

bool fsync_dir(const fs::path& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = fsync(fd) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  return (u == 0 ? std::to_string(static_cast<long>(bytes)) : fixed1(bytes)) + " " + units[u];
}

HeadResult head_url(const std::string& url, double timeout_s) {
  global_init();
  HeadResult r;
  std::unique_ptr<CURL, void (*)(CURL*)> c(curl_easy_init(), curl_easy_cleanup);
  if (!c) {
    r.error = "curl_easy_init failed";
    return r;
  }
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT_MS, std::max(1L, std::lround(timeout_s * 500)));
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT_MS, std::max(1L, std::lround(timeout_s * 1000)));
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "autoresearchd/0.1");
  CURLcode rc = curl_easy_perform(c.get());
  if (rc != CURLE_OK) {
    r.error = "curl error " + std::to_string(static_cast<int>(rc)) + ": " + flatten_to_one_line(*error ? error : curl_easy_strerror(rc));
    return r;
  }
  r.reached = true;
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &r.status);
  curl_off_t length = -1;
  if (curl_easy_getinfo(c.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK && length >= 0)
    r.length = static_cast<double>(length);
  return r;
}

std::optional<std::string> verify_gzip(const fs::path& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "rb"), fclose);
  if (!f) return std::string("cannot open: ") + strerror(errno);
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return std::string("zlib init failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  std::vector<unsigned char> in(1 << 16), out(1 << 18);
  uint64_t consumed = 0;  // compressed bytes handed to zlib before the current buffer
  bool member_open = false, any_member = false;
  for (;;) {
    size_t n = fread(in.data(), 1, in.size(), f.get());
    if (n == 0) {
      if (ferror(f.get())) return std::string("read error: ") + strerror(errno);
      break;
    }
    z.next_in = in.data();
    z.avail_in = static_cast<uInt>(n);
    while (z.avail_in > 0) {
      member_open = true;
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      int rc = inflate(&z, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // The member's CRC-32 and length matched (zlib checks the trailer).
        any_member = true;
        member_open = false;
        if (inflateReset(&z) != Z_OK) return std::string("zlib reset failed");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        uint64_t at = consumed + (n - z.avail_in);
        return std::string("not a valid gzip stream: ") + (z.msg ? z.msg : "zlib error " + std::to_string(rc)) +
               " at byte " + std::to_string(at);
      }
    }
    consumed += n;
  }
  if (member_open) return "truncated: the gzip stream ends after " + std::to_string(consumed) + " bytes";
  if (!any_member) return std::string("empty file");
  return std::nullopt;
}

bool is_whole(const fs::path& dest) {
  std::error_code ec;
  if (!fs::is_regular_file(dest, ec)) return false;
  std::string now = stamp_of(dest);
  std::ifstream in(stamp_path(dest), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in && ss.str() == now) return true;
  if (verify_gzip(dest)) return false;
  write_stamp(dest);
  return true;
}

FetchOutcome fetch_file(const std::string& url, const fs::path& dest, const FetchOptions& o) {
  FetchOutcome out;
  if (is_whole(dest)) {
    out.ok = true;
    return out;
  }
  std::error_code ec;
  fs::remove(dest, ec);  // not whole: truncated or corrupt on disk
  fs::remove(stamp_path(dest), ec);
  fs::create_directories(dest.parent_path(), ec);
  if (ec) {
    out.error = dest.parent_path().string() + ": " + ec.message() + "; fix: check data.cache";
    return out;
  }
  fs::path part(dest.string() + ".part");
  ProgressReport report(o, dest.filename().string());
  auto t0 = Clock::now();
  double wait = o.retry_wait_s;
  TryResult r;
  for (int attempt = 1; attempt <= std::max(1, o.attempts); ++attempt) {
    r = one_transfer(url, part, o, report);
    if (r.kind != TryResult::Kind::kRetry) break;
    if (attempt < o.attempts) {
      if (o.progress) *o.progress << (o.tty ? "\n" : "") << "data fetch: " << r.error << " (try " << attempt << " of "
                                  << o.attempts << ", resuming in " << fixed1(wait) << " s)\n";
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      wait *= 2;
    }
  }
  if (r.kind != TryResult::Kind::kComplete) {
    if (o.progress && o.tty) *o.progress << "\n";
    if (fs::file_size(part, ec) == 0) fs::remove(part, ec);
    out.error = r.error;  // a non-empty .part stays: the next fetch resumes it
    return out;
  }
  if (auto bad = verify_gzip(part)) {
    fs::remove(part, ec);
    out.error = url + ": the download is corrupt (" + *bad + "); it was deleted, nothing was moved into place; fix: "
                "run the fetch again; if it repeats, the server or a proxy alters the file: use another mirror "
                "(data.sources)";
    return out;
  }
  fs::rename(part, dest, ec);
  if (ec || !fsync_dir(dest.parent_path())) {
    out.error = dest.string() + ": cannot move the download into place: " + (ec ? ec.message() : strerror(errno));
    return out;
  }
  write_stamp(dest);
  report.finish(static_cast<double>(fs::file_size(dest, ec)),
                std::chrono::duration<double>(Clock::now() - t0).count());
  out.ok = true;
  out.downloaded = true;
  return out;
}

void fetch_plan(const FetchPlan& plan, const FetchOptions& o) {
  std::vector<const SourceFile*> files;
  for (const auto& f : plan.train) files.push_back(&f);
  for (const auto& f : plan.val) files.push_back(&f);
  if (files.empty()) return;
  fs::path dir = files.front()->dest.parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FatalError("data fetch: " + dir.string() + ": " + ec.message() + "; fix: check data.cache");
  int lock = open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) throw FatalError("data fetch: " + (dir / ".lock").string() + ": " + strerror(errno));
  std::unique_ptr<int, void (*)(int*)> guard(&lock, [](int* fd) { close(*fd); });
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    if (o.progress) *o.progress << "data fetch: waiting for another fetch into " << dir.string() << "\n";
    if (flock(lock, LOCK_EX) != 0) throw FatalError("data fetch: cannot lock " + dir.string());
  }
  size_t i = 0;
  for (const SourceFile* f : files) {
    ++i;
    if (o.progress && !o.tty && !is_whole(f->dest))
      *o.progress << "data fetch: [" << i << "/" << files.size() << "] " << f->url << "\n";
    FetchOutcome r = fetch_file(f->url, f->dest, o);
    if (!r.ok) throw FatalError("data fetch: " + r.error);
  }
}

}  // namespace ard
