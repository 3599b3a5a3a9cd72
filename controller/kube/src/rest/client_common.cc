// Client-level helpers that do not depend on the transport: WatchCanceller and ListAll.
#include "tephra/kube/client.h"

namespace tephra::kube {

void WatchCanceller::Cancel() {
  std::function<void()> cb;
  {
    core::MutexLock lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    cb = std::move(cb_);
    cb_ = nullptr;
  }
  if (cb) cb();
}

bool WatchCanceller::cancelled() const {
  core::MutexLock lock(mu_);
  return cancelled_;
}

bool WatchCanceller::SetCallback(std::function<void()> cb) {
  core::MutexLock lock(mu_);
  if (cancelled_) return false;
  cb_ = std::move(cb);
  return true;
}

void WatchCanceller::ClearCallback() {
  core::MutexLock lock(mu_);
  cb_ = nullptr;
}

StatusOr<ObjectList> ListAll(Client& c, const ResourceInfo& r, const std::string& ns, ListOptions opts) {
  const ListOptions first = opts;
  bool restarted = false;
  ObjectList all;
  while (true) {
    auto page = c.List(r, ns, opts);
    if (!page.ok()) {
      // An expired continue token: start over once with a fresh consistent list (client-go's pager does the
      // same, falling back to a full list).
      if (core::IsGone(page.status()) && !opts.continue_token.empty() && !restarted) {
        restarted = true;
        opts = first;
        opts.continue_token.clear();
        opts.resource_version = "";
        all = ObjectList{};
        continue;
      }
      return page.status();
    }
    if (all.items.empty()) {
      all.items = std::move(page->items);
    } else {
      all.items.reserve(all.items.size() + page->items.size());
      for (auto& j : page->items) all.items.push_back(std::move(j));
    }
    // The RV of the first page is the snapshot the whole list belongs to; later pages carry the same one.
    if (all.metadata.resource_version.empty()) all.metadata.resource_version = page->metadata.resource_version;
    if (page->metadata.continue_token.empty()) break;
    opts.continue_token = page->metadata.continue_token;
    // With a continue token the server rejects a resourceVersion other than "" (the token pins the snapshot).
    opts.resource_version.clear();
  }
  return all;
}

}  // namespace tephra::kube
