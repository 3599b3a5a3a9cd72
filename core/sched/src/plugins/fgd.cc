// The "fgd" plugin: fragmentation-gradient scoring for nodes whose GPUs are shared (docs/devices.md,
// "Fragmentation"). A node's fragmentation, for the mix of requests the cluster sees, is the GPU capacity it
// has free that a request drawn from that mix could not use; placing a pod changes it, and the node where the
// pod adds the least fragmentation (or removes the most) scores highest. This is the method of "Beware of
// Fragmentation" (Weng et al., USENIX ATC'23), applied to Tephra's card model (devices.h).
//
// Arguments: fgd.weight (1; the node score is 0..100 times the weight), fgd.popularity (95: the mix is the
// most frequent pod shapes that together make up this percentage of the cluster's pods).
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

// One entry of the request mix: a representative task of a shape and how often the shape occurs (0..1).
struct MixEntry {
  TaskInfo rep;
  double freq = 0;
  int64_t per_card = 0;  // thousandths of a card each of its cards needs (1000 for a whole card)
  int cards = 0;
};

// The free part of each card, in thousandths (a card a whole-card pod holds, or an unhealthy one, has none).
void FreeMilli(const NodeDevices& d, std::vector<int64_t>* out) {
  out->clear();
  for (const Card& c : d.cards) out->push_back(c.Healthy() && c.owners == 0 ? 1000 - c.used_cores : 0);
}

class FgdPlugin final : public Plugin {
 public:
  explicit FgdPlugin(ArgParser& args)
      : weight_(args.Double("fgd.weight", 1)), popularity_(args.Double("fgd.popularity", 95)) {}
  std::string Name() const override { return "fgd"; }
  uint32_t Hooks() const override { return weight_ == 0 ? 0u : static_cast<uint32_t>(kHookNodeOrder); }

  core::Status OnSessionOpen(Session& ssn) override {
    // The mix is recomputed when the number of tasks moved by more than 2% since the last time: it is a
    // distribution, and recounting ten thousand tasks every cycle would cost more than it changes.
    const ClusterState& st = ssn.state();
    const size_t n = st.task_count();
    if (!mix_.empty() && n <= counted_ * 102 / 100 && n * 102 / 100 >= counted_) return core::Status::OK();
    counted_ = n;
    std::unordered_map<uint32_t, std::pair<const TaskInfo*, int>> by_shape;
    st.ForEachTask([&](const TaskInfo& t) {
      auto& [rep, count] = by_shape[t.shape];
      if (!rep) rep = &t;
      ++count;
    });
    std::vector<std::pair<const TaskInfo*, int>> shapes;
    for (auto& [shape, v] : by_shape) shapes.push_back(v);
    std::sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first->uid < b.first->uid;
    });
    mix_.clear();
    double covered = 0;
    for (const auto& [rep, count] : shapes) {
      if (covered >= popularity_ / 100 * static_cast<double>(n)) break;
      covered += count;
      MixEntry e;
      e.rep = *rep;
      e.freq = static_cast<double>(count) / static_cast<double>(n);
      e.cards = rep->devices.whole > 0 ? rep->devices.whole : rep->devices.shared;
      e.per_card = rep->devices.whole > 0 ? 1000 : rep->devices.cores;
      mix_.push_back(std::move(e));
    }
    return core::Status::OK();
  }

  double NodeScore(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
    // A node without cards has no GPU to fragment: no change, the sigmoid's middle (a 0 here would send
    // every CPU-only pod to the GPU nodes, the worst place for it).
    if (n.devices.cards.empty() || mix_.empty()) return weight_ * 50;
    std::optional<double> delta = Best(t, n, nullptr);
    if (!delta) return 0;
    // The paper's squashing: a change of one whole card of fragmentation moves the score most. The score is
    // cut to whole points, as kube-scheduler's framework (and the paper's implementation) scores nodes: the
    // fraction below a point is noise that scatters pods over nodes that are equally good, while a tie goes
    // to the node order, which fills nodes one after another. On the openb replay the whole points give
    // 95.3 % allocation against 94.8 % unrounded (bench/RESULTS.md, "GPU sharing").
    return weight_ * std::floor(100 / (1 + std::exp(-*delta / 1000)));
  }

  // A share of one card goes to the card where it adds the least fragmentation (the paper's GPU choice);
  // whole cards keep ChooseCards' topology rules.
  std::optional<std::vector<int>> ChooseCards(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
    if (mix_.empty() || t.devices.shared != 1) return std::nullopt;
    int card = -1;
    if (!Best(t, n, &card) || card < 0) return std::nullopt;
    return std::vector<int>{card};
  }

 private:
  // Fragmentation before minus after placing `t` on `n` (higher is better), with the card a single share
  // should take in *card; nullopt when the cards cannot serve it.
  std::optional<double> Best(const TaskInfo& t, const NodeInfo& n, int* card) const {
    FreeMilli(n.devices, &before_);
    const int64_t cpu_idle = n.Idle().Get(kCpu);
    const int64_t cpu_after = cpu_idle - t.request.Get(kCpu);
    const double frag_before = Frag(n, before_, cpu_idle);
    if (t.devices.shared == 1) {
      std::optional<double> best;
      for (size_t i = 0; i < n.devices.cards.size(); ++i) {
        if (!ShareFits(n.devices.cards[i], t.devices) || !t.devices.Allows(n.devices, n.devices.cards[i])) continue;
        after_ = before_;
        after_[i] -= t.devices.cores;
        const double delta = frag_before - Frag(n, after_, cpu_after);
        // Ties go to the fuller card (best fit), then the lower index.
        if (!best || delta > *best + 1e-9 ||
            (std::abs(delta - *best) <= 1e-9 && card && *card >= 0 && before_[i] < before_[static_cast<size_t>(*card)])) {
          best = delta;
          if (card) *card = static_cast<int>(i);
        }
      }
      return best;
    }
    after_ = before_;
    if (!t.devices.empty()) {
      auto chosen = sched::ChooseCards(n.devices, t.devices);
      if (!chosen.ok()) return std::nullopt;
      for (int p : *chosen) after_[static_cast<size_t>(p)] -= t.devices.whole > 0 ? 1000 : t.devices.cores;
    }
    return frag_before - Frag(n, after_, cpu_after);
  }

  // Sum over the mix of the free GPU a request of that kind could not use on this node.
  double Frag(const NodeInfo& n, const std::vector<int64_t>& free, int64_t cpu_idle) const {
    int64_t total = 0;
    for (int64_t f : free) total += f;
    if (total == 0) return 0;
    double frag = 0;
    for (const MixEntry& m : mix_) {
      if (m.cards == 0 || !MatchesNodeSelectorAndAffinity(m.rep, n)) {
        frag += m.freq * static_cast<double>(total);  // cannot use GPUs, or not this node's
        continue;
      }
      int fit = 0;
      int64_t unusable = 0;
      for (int64_t f : free) {
        if (f >= m.per_card) ++fit;
        else unusable += f;
      }
      if (fit >= m.cards && cpu_idle >= m.rep.request.Get(kCpu)) frag += m.freq * static_cast<double>(unusable);
      else frag += m.freq * static_cast<double>(total);
    }
    return frag;
  }

  double weight_, popularity_;
  std::vector<MixEntry> mix_;
  size_t counted_ = 0;
  // Scratch space for NodeScore (the state thread runs one session at a time).
  mutable std::vector<int64_t> before_, after_;
};

}  // namespace

Made NewFgd(const PluginOption& o) { return Make<FgdPlugin>(o); }

}  // namespace tephra::sched::plugins
