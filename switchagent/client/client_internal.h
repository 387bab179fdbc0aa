// Private state of AggClient / AggGroup (data_client.h).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <vector>

#include "client_core.h"
#include "switchagg/agent/data_client.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::agent {

// The protocol state (client_core.h) and the call's UCX sends.
struct AggGroup::State : GroupCore {
  // One outstanding CONTRIB per slot: its request and header.
  std::vector<std::unique_ptr<ucx::Request>> slot_request;  // created on first use
  std::vector<uint8_t> slot_used;                           // a send was posted on it
  std::vector<std::array<uint8_t, wire::kMaxHeaderBytes>> slot_header;
};

// The protocol state (client_core.h) over a UCX connection.
struct AggClient::Impl : ClientCore {
  std::unique_ptr<ucx::Context> context;
  std::unique_ptr<ucx::Worker> worker;
  std::unique_ptr<ucx::Endpoint> ep;

  void onMessage(const ucx::AmMessage& am) {
    onFrame(am.header, am.header_length, am.data, am.length);
  }
  bool broken() const { return failed || (ep && ep->failed()); }
  Status brokenStatus() const;
  // Sends a small control message and waits (bounded) until it left.
  Status sendControl(const wire::Message& m, int64_t timeout_ms);
  // Waits for `pending` sends to complete; closes the connection if they do
  // not within timeout_ms (so no send still reads a caller's buffer).
  void drain(std::vector<ucx::Request*> pending, int64_t timeout_ms);

 protected:
  // Given up on: its close is forced, cancelling sends still in flight.
  void abandon() override {
    if (ep) ep->abandon();
  }
};

}  // namespace switchagg::agent
