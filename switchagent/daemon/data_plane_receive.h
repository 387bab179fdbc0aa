// How the data plane's UCX worker hands contributions to the engine's slot
// memory (docs/agent-protocol.md "Received into the slot").
#pragma once

#include <functional>

#include "aggregation_engine.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::agent {

// Rendezvous CONTRIBs of kAmToAgent are received where the engine places
// them (AggregationEngine::placeContrib), and slot buffers allocated from
// now on are registered with the worker's context (ucp_mem_map; where that
// fails they are used unregistered, said once in the log). `adopt` gives a
// connection its PeerId (0: a dying one). Call after the AM handler is set.
Status receiveIntoSlots(ucx::Worker& worker, AggregationEngine& engine,
                        std::function<PeerId(ucx::Endpoint*)> adopt);

}  // namespace switchagg::agent
