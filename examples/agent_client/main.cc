// agent_client CONTROL_ADDRESS: what a site tool does with switchagg's
// client libraries. Asks the agent for its status (control client),
// leases one slot for a job of its own, sums a vector through the agent's
// data plane as a one-member group (data-plane client), checks the
// result, and deletes the lease. Exit 0 when all of that worked.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "switchagg/agent/control_client.h"
#include "switchagg/agent/data_client.h"

using switchagg::Dtype;
using switchagg::Op;
using switchagg::agent::AggClient;
using switchagg::agent::ControlClient;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CONTROL_ADDRESS (unix:/path or host:port)\n", argv[0]);
    return 2;
  }
  ControlClient control(argv[1]);
  auto status = control.status();
  if (!status.ok()) {
    std::fprintf(stderr, "agent_client: status: %s\n", status.status().toString().c_str());
    return 1;
  }
  std::printf("agent %s: %d of %d slots in use, data plane %s\n", status->version.c_str(),
              status->slots_in_use, status->slots_total, status->data_address.c_str());

  const std::string job = "agent-client-example-" + std::to_string(getpid());
  auto lease = control.createLease(job, getuid(), 1, 60);
  if (!lease.ok()) {
    std::fprintf(stderr, "agent_client: lease: %s\n", lease.status().toString().c_str());
    return 1;
  }
  int rc = 1;
  {
    // One address (an agent that spreads leases over threads lists one per
    // thread; the first, the lease's home thread, serves the whole call).
    const std::string address = lease->data_address.substr(0, lease->data_address.find(','));
    auto client = AggClient::connect(address, lease->token, 5000);
    if (!client.ok()) {
      std::fprintf(stderr, "agent_client: connect: %s\n", client.status().toString().c_str());
    } else if (auto group = (*client)->join(1, 1, 0, 5000); !group.ok()) {
      std::fprintf(stderr, "agent_client: join: %s\n", group.status().toString().c_str());
    } else {
      std::vector<float> in = {1.5f, -2.0f, 3.25f}, out(in.size(), 0.0f);
      auto st =
          (*group)->allreduce(Dtype::kFloat32, Op::kSum, in.data(), out.data(), in.size(), 5000);
      if (!st.ok()) {
        std::fprintf(stderr, "agent_client: allreduce: %s\n", st.toString().c_str());
      } else if (out != in) {
        std::fprintf(stderr, "agent_client: the agent's sum of one member is not its input\n");
      } else {
        std::printf("allreduce through the agent: %g %g %g\n", out[0], out[1], out[2]);
        rc = 0;
      }
    }
  }
  auto deleted = control.deleteLease(job);
  if (!deleted.ok()) {
    std::fprintf(stderr, "agent_client: delete lease: %s\n", deleted.status().toString().c_str());
    return 1;
  }
  return rc;
}
