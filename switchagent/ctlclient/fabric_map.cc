// The fabric map's parser (fabric_map.h). The TOML subset is toml++'s, as
// for agent.toml (control/config_toml.cc); the map's own rules are here.
#include "switchagg/agent/fabric_map.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fabric_map_internal.h"

#include "switchagg/agent/control_client.h"

namespace switchagg::agent {

namespace fabric_detail {

Status bad(const std::string& what) {
  return Status(Code::kInvalidArgument, what);
}

}  // namespace fabric_detail

using fabric_detail::bad;

namespace {

constexpr size_t kMaxHostlistNames = 65536;

// Splits at commas outside brackets.
std::vector<std::string> topLevelItems(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char ch : text) {
    if (ch == '[') ++depth;
    if (ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

bool allDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// One item: "prefix[ranges]suffix" or a plain name.
Status expandItem(const std::string& item, std::vector<std::string>* out) {
  const size_t open = item.find('[');
  if (open == std::string::npos) {
    if (item.find(']') != std::string::npos) return bad("unbalanced ']' in '" + item + "'");
    out->push_back(item);
    return Status::Ok();
  }
  const size_t close = item.find(']', open);
  if (close == std::string::npos) return bad("unbalanced '[' in '" + item + "'");
  if (item.find('[', open + 1) < close || item.find_first_of("[]", close + 1) != std::string::npos)
    return bad("one bracket range per name is supported, in '" + item + "'");
  const std::string prefix = item.substr(0, open), suffix = item.substr(close + 1);
  std::stringstream ranges(item.substr(open + 1, close - open - 1));
  std::string range;
  while (std::getline(ranges, range, ',')) {
    const size_t dash = range.find('-');
    const std::string lo_text = range.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : range.substr(dash + 1);
    if (!allDigits(lo_text) || !allDigits(hi_text) || lo_text.size() > 9 || hi_text.size() > 9)
      return bad("bad range '" + range + "' in '" + item + "' (want N or N-M)");
    const long lo = std::stol(lo_text), hi = std::stol(hi_text);
    if (hi < lo) return bad("range '" + range + "' in '" + item + "' runs backwards");
    for (long v = lo; v <= hi; ++v) {
      std::string num = std::to_string(v);
      if (num.size() < lo_text.size()) num.insert(0, lo_text.size() - num.size(), '0');
      out->push_back(prefix + num + suffix);
      if (out->size() > kMaxHostlistNames) return bad("hostlist '" + item + "' is too long");
    }
  }
  return Status::Ok();
}

}  // namespace

namespace fabric_detail {

Result<std::string> stringKey(const toml::table& t, const std::string& where, const char* key,
                              bool required) {
  const toml::node* n = t.get(key);
  if (n == nullptr) {
    if (required) return bad(where + ": missing key '" + key + "'");
    return std::string();
  }
  if (!n->is_string() || n->value<std::string>()->empty())
    return bad(where + "." + key + ": expected a non-empty string");
  return *n->value<std::string>();
}

Status nodesOf(const toml::node& n, const std::string& where, std::vector<std::string>* out) {
  std::vector<std::string> lists;
  if (n.is_string()) {
    lists.push_back(*n.value<std::string>());
  } else if (const toml::array* arr = n.as_array()) {
    for (const toml::node& item : *arr) {
      if (!item.is_string()) return bad(where + ".nodes: expected strings (hostlists)");
      lists.push_back(*item.value<std::string>());
    }
  } else {
    return bad(where + ".nodes: expected a hostlist string or an array of them");
  }
  for (const std::string& l : lists) {
    Result<std::vector<std::string>> names = expandHostlist(l);
    if (!names.ok()) return bad(where + ".nodes: " + names.status().message());
    out->insert(out->end(), names->begin(), names->end());
  }
  if (out->empty()) return bad(where + ".nodes: serves no node");
  return Status::Ok();
}

}  // namespace fabric_detail

using fabric_detail::nodesOf;
using fabric_detail::stringKey;

Result<std::vector<std::string>> expandHostlist(const std::string& text) {
  std::vector<std::string> out;
  for (std::string item : topLevelItems(text)) {
    const size_t b = item.find_first_not_of(" \t");
    const size_t e = item.find_last_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (item.empty()) return bad("empty name in hostlist '" + text + "'");
    SWITCHAGG_RETURN_IF_ERROR(expandItem(item, &out));
  }
  return out;
}

Result<FabricMap> FabricMap::parse(const std::string& text, const std::string& origin) {
  Result<toml::table> parsed = parseTomlText(text, origin);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = parsed.value();
  auto err = [&](const std::string& what) { return bad("fabric map " + origin + ": " + what); };
  for (const auto& [key, node] : root)
    if (key.str() != "agent" && key.str() != "pool")
      return err(std::string(key.str()) +
                 ": unknown key (the map is a list of [[agent]] tables and [[pool]] tables)");
  const toml::array* list = root["agent"].as_array();
  if (list == nullptr || list->empty()) return err("no [[agent]] table");
  FabricMap map;
  std::map<std::string, std::string> served_by;  // node -> agent
  size_t index = 0;
  for (const toml::node& n : *list) {
    const toml::table* t = n.as_table();
    std::string where = "agent #" + std::to_string(++index);
    if (t == nullptr) return err(where + ": expected a table ([[agent]])");
    for (const auto& [key, value] : *t) {
      const std::string k(key.str());
      if (k != "name" && k != "control" && k != "data" && k != "nodes" && k != "parent")
        return err(where + "." + k + ": unknown key (keys: name, control, data, nodes, parent)");
    }
    FabricAgent a;
    Result<std::string> name = stringKey(*t, where, "name", true);
    if (!name.ok()) return err(name.status().message());
    a.name = *name;
    where = "agent '" + a.name + "'";
    if (map.find(a.name) != nullptr) return err(where + ": defined twice");
    Result<std::string> control = stringKey(*t, where, "control", true);
    Result<std::string> data = stringKey(*t, where, "data", false);
    Result<std::string> parent = stringKey(*t, where, "parent", false);
    for (const Result<std::string>* v : {&control, &data, &parent})
      if (!v->ok()) return err(v->status().message());
    a.control = *control;
    a.data = *data;
    a.parent = *parent;
    Result<ControlAddress> address = parseControlAddress(a.control);
    if (!address.ok()) return err(where + ".control: " + address.status().message());
    if (!a.data.empty() &&
        (a.data.find(':') == std::string::npos || a.data.find(',') != std::string::npos))
      return err(where + ".data: '" + a.data + "' is not host:port");
    // Without nodes it must be a spine: checked once every parent is known.
    if (const toml::node* nodes = t->get("nodes")) {
      Status st = nodesOf(*nodes, where, &a.nodes);
      if (!st.ok()) return err(st.message());
    }
    for (const std::string& node : a.nodes) {
      auto [it, fresh] = served_by.emplace(node, "agent '" + a.name + "'");
      if (!fresh)
        return err("node " + node + " is served by both " + it->second + " and agent '" + a.name +
                   "'");
    }
    map.agents_.push_back(std::move(a));
  }
  for (const FabricAgent& a : map.agents_) {
    if (a.parent.empty()) continue;
    if (map.find(a.parent) == nullptr)
      return err("agent '" + a.name + "': parent '" + a.parent + "' is not an agent of the map");
    // Walk up; more steps than agents means a cycle.
    const FabricAgent* up = &a;
    for (size_t steps = 0; up != nullptr && !up->parent.empty(); ++steps) {
      if (steps >= map.agents_.size()) return err("agent '" + a.name + "': parents form a cycle");
      up = map.find(up->parent);
    }
  }
  Result<std::vector<FabricPool>> pools = fabric_detail::parsePools(root, map, &served_by);
  if (!pools.ok()) return err(pools.status().message());
  map.pools_ = std::move(*pools);
  for (const FabricPool& pool : map.pools_)
    for (FabricAgent& a : map.agents_)
      if (pool.rails && std::find(pool.agents.begin(), pool.agents.end(), a.name) != pool.agents.end())
        a.rail = true;
  Status tree = map.checkTree();
  if (!tree.ok()) return err(tree.message());
  for (size_t i = 0; i < map.agents_.size(); ++i)
    for (const std::string& node : map.agents_[i].nodes) map.owner_[node] = long(i);
  for (size_t i = 0; i < map.pools_.size(); ++i)
    for (const std::string& node : map.pools_[i].nodes) map.owner_[node] = -long(i) - 1;
  return map;
}

// Two levels at most: a parent (spine) serves no nodes and has no parent;
// an agent without nodes must be someone's parent.
Status FabricMap::checkTree() const {
  for (const FabricAgent& a : agents_) {
    const std::vector<const FabricAgent*> children = childrenOf(a.name);
    const bool pooled = std::any_of(pools_.begin(), pools_.end(), [&](const FabricPool& p) {
      return std::find(p.agents.begin(), p.agents.end(), a.name) != p.agents.end();
    });
    if (children.empty()) {
      if (a.nodes.empty() && !pooled)
        return bad("agent '" + a.name + "': missing key 'nodes' (only a spine, some agent's " +
                   "parent, or an agent of a [[pool]] serves no nodes)");
      continue;
    }
    if (!a.nodes.empty())
      return bad("agent '" + a.name + "' is the parent of agent '" + children[0]->name +
                 "' and must serve no nodes itself (a spine reduces its leaves only)");
    if (!a.parent.empty())
      return bad("agent '" + a.name +
                 "': trees deeper than two levels (leaf → spine) are not supported (it is the " +
                 "parent of '" + children[0]->name + "' and has parent '" + a.parent + "')");
  }
  return Status::Ok();
}

Result<FabricMap> FabricMap::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Code::kIoError, "cannot read fabric map " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

const FabricAgent* FabricMap::find(const std::string& name) const {
  for (const FabricAgent& a : agents_)
    if (a.name == name) return &a;
  return nullptr;
}

const FabricPool* FabricMap::poolOf(const std::string& node) const {
  auto it = owner_.find(node);
  return it == owner_.end() || it->second >= 0 ? nullptr : &pools_[size_t(-it->second - 1)];
}

const FabricAgent* FabricMap::agentOf(const std::string& node) const {
  auto it = owner_.find(node);
  return it == owner_.end() || it->second < 0 ? nullptr : &agents_[size_t(it->second)];
}

Result<std::vector<const FabricAgent*>> FabricMap::agentsFor(const std::vector<std::string>& nodes,
                                                             const PoolRequest& request) const {
  const FabricPool* pool = nodes.empty() ? nullptr : poolOf(nodes.front());
  for (const std::string& node : nodes) {
    const FabricPool* p = poolOf(node);
    if (p == pool) continue;
    const std::string a = pool ? "pool '" + pool->name + "'" : "no pool";
    const std::string b = p ? "pool '" + p->name + "'" : "no pool";
    return bad("node " + nodes.front() + " is in " + a + " and node " + node + " in " + b +
               ": a job is either inside one reducer pool or in none");
  }
  if (pool != nullptr) return fabric_detail::poolAgents(*this, *pool, request);
  if (request.reducers > 0)
    return bad("reducers=" + std::to_string(request.reducers) +
               ": the job's nodes are in no reducer pool of the fabric map");
  std::set<const FabricAgent*> needed;
  for (const std::string& node : nodes) {
    const FabricAgent* a = agentOf(node);
    if (a == nullptr) return bad("node " + node + " is served by no agent of the fabric map");
    needed.insert(a);
  }
  std::vector<const FabricAgent*> out;
  for (const FabricAgent& a : agents_)
    if (needed.count(&a)) out.push_back(&a);
  if (out.size() <= 1) return out;  // inside one leaf (or no node at all)
  const FabricAgent* first = out.front();
  if (std::all_of(out.begin(), out.end(), [](const FabricAgent* a) { return a->parent.empty(); }))
    return out;  // stripes
  for (const FabricAgent* a : out) {
    if (a->parent.empty() != first->parent.empty()) {
      const FabricAgent* leaf = first->parent.empty() ? a : first;
      const FabricAgent* root = first->parent.empty() ? first : a;
      return bad("the nodes need agent '" + leaf->name + "' (a leaf of '" + leaf->parent +
                 "') and agent '" + root->name + "' (no parent): a job over tree leaves and " +
                 "agents without a parent is not supported");
    }
    if (a->parent != first->parent)
      return bad("the nodes need agent '" + first->name + "' (a leaf of '" + first->parent +
                 "') and agent '" + a->name + "' (a leaf of '" + a->parent +
                 "'): a job under two spines is not supported");
  }
  const FabricAgent* spine = find(first->parent);
  if (spine == nullptr || !spine->parent.empty())  // parse() refuses such maps
    return bad("agent '" + first->parent +
               "': trees deeper than two levels (leaf → spine) are not supported");
  out.push_back(spine);
  return out;
}

std::vector<const FabricAgent*> FabricMap::childrenOf(const std::string& name) const {
  std::vector<const FabricAgent*> out;
  for (const FabricAgent& a : agents_)
    if (a.parent == name) out.push_back(&a);
  return out;
}

bool FabricMap::isTree(const std::vector<const FabricAgent*>& list) {
  if (list.size() < 2 || !list.back()->parent.empty()) return false;
  for (size_t k = 0; k + 1 < list.size(); ++k)
    if (list[k]->parent != list.back()->name) return false;
  return true;
}

}  // namespace switchagg::agent
