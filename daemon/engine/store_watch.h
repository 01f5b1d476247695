// The store's file, watched while the daemon runs: every few seconds, whether
// results.db is still the file the store has open (deleted or replaced, the
// daemon must stop without writing to it again), and the session's heartbeat,
// so that a restart after kill -9 ends this session's experiments at the last
// time the daemon was alive.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "daemon/store/store.h"

namespace ard {

class StoreWatch {
 public:
  /// lost: called once, on the loop, with why the file is lost ("... was
  /// deleted"); the watch stops then.
  StoreWatch(boost::asio::io_context& io, Store& store, double every_s, std::function<void(const std::string&)> lost);

  /// Checks now, then every every_s seconds, marking session alive each time
  /// (a store that takes no write is left to the write that mattered).
  void start(int64_t session);
  void stop() { timer_.cancel(); }

 private:
  void check();

  Store& store_;
  double every_s_;
  std::function<void(const std::string&)> lost_;
  boost::asio::steady_timer timer_;
  int64_t session_ = 0;
};

}  // namespace ard
