// Compact resource vectors for the scheduling core.
//
// Why not a map<string, Quantity>: the allocate loop compares and adds resource vectors millions of times
// per cycle; a fixed array of int64 with a per-cluster name registry makes those operations branch-light
// and allocation-free. Units: cpu in millicores, memory (and ephemeral-storage if registered) in bytes,
// pods as a count, every extended scalar ("nvidia.com/gpu", "huawei.com/Ascend910") in its integer unit
// (milli-units for fractional scalars are the caller's choice; the core only adds and compares).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tephra::sched {

// Fixed dimension indexes; extended scalars get indexes from kFirstScalar on via ResourceRegistry.
inline constexpr int kCpu = 0;
inline constexpr int kMemory = 1;
inline constexpr int kPods = 2;
inline constexpr int kFirstScalar = 3;
inline constexpr int kMaxResources = 12;
// The last dimension belongs to no name: a request for a resource no node offers (or one past the table, see
// ResourceRegistry) is set here, and no node ever has any of it, so such a request fits nowhere and the
// explanation can say why (TaskInfo::unoffered, JobInfo::unoffered name the resources).
inline constexpr int kUnoffered = kMaxResources - 1;
// "Unlimited" for capability-style vectors (a queue without capability on a dimension).
inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;
// Ceiling of every quantity converted from an API object (scheduler/convert.h clamps to [0, kMaxQuantity]):
// 2^44, that is 16Ti of memory in bytes, 17.6 million cores in millicores, 1.7e13 devices or pods. The sum of
// 100,000 quantities at the ceiling (1.76e18) stays below kUnlimited (2.3e18) and far from int64 overflow,
// which is why Resource's arithmetic below adds and subtracts without checks: every vector the core sums
// (node used, queue allocated and requested, a gang's need) is a sum of converted quantities over pods or
// nodes, fewer than 100,000 of each at a time, or kUnlimited itself compared, never summed with another
// kUnlimited. A request at the ceiling fits only a node that offers 16Ti of memory (or 17.6 million cores).
inline constexpr int64_t kMaxQuantity = int64_t{1} << 44;
static_assert(kMaxQuantity * 100'000 < kUnlimited);
// Ceiling of the aggregate quantities: a PodGroup's minResources and a Queue's capability, guarantee and
// deserved (2^50: 1Pi of memory). They describe many pods at once (a 200-pod gang of 2Ti nodes asks 400Ti),
// so the pod ceiling would understate them. They are summed only over admitted jobs (the enqueue gate admits
// what fits the cluster) or over an administrator's queues (2,047 of them at the ceiling stay below
// kUnlimited), never over every object a tenant can create.
inline constexpr int64_t kMaxAggregateQuantity = int64_t{1} << 50;
static_assert(kMaxAggregateQuantity * 2'047 < kUnlimited);

class Resource {
 public:
  Resource() { v_.fill(0); }
  static Resource Cpu(int64_t milli) { Resource r; r.v_[kCpu] = milli; return r; }
  static Resource CpuMem(int64_t milli, int64_t bytes) { Resource r; r.v_[kCpu] = milli; r.v_[kMemory] = bytes; return r; }
  // Every dimension kUnlimited: the neutral element of Min().
  static Resource Unlimited() { Resource r; r.v_.fill(kUnlimited); return r; }

  int64_t Get(int i) const { return v_[static_cast<size_t>(i)]; }
  void Set(int i, int64_t value) { v_[static_cast<size_t>(i)] = value; }
  Resource& With(int i, int64_t value) { Set(i, value); return *this; }

  Resource& operator+=(const Resource& o) { for (size_t i = 0; i < v_.size(); ++i) v_[i] += o.v_[i]; return *this; }
  Resource& operator-=(const Resource& o) { for (size_t i = 0; i < v_.size(); ++i) v_[i] -= o.v_[i]; return *this; }
  friend Resource operator+(Resource a, const Resource& b) { a += b; return a; }
  friend Resource operator-(Resource a, const Resource& b) { a -= b; return a; }
  bool operator==(const Resource& o) const = default;

  // True when every dimension is <= the same dimension of `o` (all dimensions, zeros included).
  bool LessEqual(const Resource& o) const {
    for (size_t i = 0; i < v_.size(); ++i) if (v_[i] > o.v_[i]) return false;
    return true;
  }
  // True when `this` fits into `avail` on every dimension this vector actually requests (> 0).
  // This is the "fits" test of predicates and of queue allocatable checks (Volcano LessEqualWithDimension).
  bool FitsIn(const Resource& avail) const {
    for (size_t i = 0; i < v_.size(); ++i) if (v_[i] > 0 && v_[i] > avail.v_[i]) return false;
    return true;
  }
  // First requested dimension that does not fit, or -1.
  int FirstShortDimension(const Resource& avail) const {
    for (size_t i = 0; i < v_.size(); ++i) if (v_[i] > 0 && v_[i] > avail.v_[i]) return static_cast<int>(i);
    return -1;
  }
  bool IsZero() const { for (auto x : v_) if (x != 0) return false; return true; }
  // True when nothing but the pod slot is requested: a best-effort pod in Volcano's sense.
  bool IsBestEffort() const {
    for (size_t i = 0; i < v_.size(); ++i) if (i != static_cast<size_t>(kPods) && v_[i] > 0) return false;
    return true;
  }
  Resource Min(const Resource& o) const { Resource r; for (size_t i = 0; i < v_.size(); ++i) r.v_[i] = v_[i] < o.v_[i] ? v_[i] : o.v_[i]; return r; }
  Resource Max(const Resource& o) const { Resource r; for (size_t i = 0; i < v_.size(); ++i) r.v_[i] = v_[i] > o.v_[i] ? v_[i] : o.v_[i]; return r; }
  // Negative dimensions clamped to 0 (idle can go negative transiently while an informer lags).
  Resource ClampZero() const { Resource r = *this; for (auto& x : r.v_) if (x < 0) x = 0; return r; }

  const std::array<int64_t, kMaxResources>& raw() const { return v_; }

 private:
  std::array<int64_t, kMaxResources> v_;
};

// What `need` lacks in `avail`: need - avail on every dimension `need` requests (> 0) and `avail` cannot
// cover; zero elsewhere. "Short by" in explanations.
Resource Shortfall(const Resource& need, const Resource& avail);

// "example.com/foo, which no node offers" for the names of TaskInfo/JobInfo::unoffered (at most the first
// eight, then "and N more"), so reasons read like kube-scheduler's "Insufficient example.com/foo".
std::string UnofferedText(const std::vector<std::string>& names);

// Name <-> dimension index. Fixed names: "cpu", "memory", "pods". Extended scalars get a dimension when a node
// offers them (Intern: the scheduler process interns only what nodes' allocatable names, which cluster admins
// control, never what a pod, PodGroup or Queue names, so tenants cannot fill the table); at most
// kUnoffered - kFirstScalar of them. Intern returns nullopt past that (the caller logs the dropped name and
// counts it); a request for a name without a dimension is set on kUnoffered by the caller, so it fits no node.
class ResourceRegistry {
 public:
  ResourceRegistry();
  std::optional<int> Intern(std::string_view name);
  std::optional<int> Find(std::string_view name) const;
  // kUnoffered has a descriptive name ("resources no node offers") for messages that cannot name them.
  const std::string& Name(int index) const;
  // Names with a dimension: indexes [0, size()); kUnoffered is never one of them.
  int size() const { return static_cast<int>(names_.size()); }
  // "cpu 500m, memory 1Gi, nvidia.com/gpu 8" style rendering of the non-zero dimensions, for messages.
  // `if_empty` is returned when no dimension is set (explanations say "nothing"). kUnoffered is rendered as
  // its name without a quantity (what it counts is not an amount of anything).
  std::string Format(const Resource& r, const char* if_empty = "") const;
  // `r` on exactly the dimensions `dims` requests (> 0), zeros included, so "the cluster has cpu 96,
  // nvidia.com/gpu 0 free" names what a GPU job lacks and does not list resources it never asked for.
  std::string FormatDims(const Resource& r, const Resource& dims) const;

 private:
  std::vector<std::string> names_;
};

}  // namespace tephra::sched
