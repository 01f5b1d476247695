// See store_watch.h.
#include "daemon/engine/store_watch.h"

#include "daemon/duration.h"
#include "daemon/exec/environment_fault.h"

namespace ard {

StoreWatch::StoreWatch(boost::asio::io_context& io, Store& store, double every_s,
                       std::function<void(const std::string&)> lost)
    : store_(store), every_s_(every_s), lost_(std::move(lost)), timer_(io) {}

void StoreWatch::start(int64_t session) {
  session_ = session;
  check();
}

void StoreWatch::check() {
  if (auto problem = store_.file_problem()) return lost_(*problem);
  timer_.expires_after(steady_seconds(every_s_));
  timer_.async_wait([this](const boost::system::error_code& err) {
    if (!err) check();
  });
  try {
    store_.set_session_alive(session_);
  } catch (const EnvironmentFault&) {
    // A store that takes no write pauses the engine where the write mattered.
  }
}

}  // namespace ard
