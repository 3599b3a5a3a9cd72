// The admission webhook's whole HTTP exchange under arbitrary bodies: libFuzzer's entry point. Built with
// libFuzzer (clang) by scripts/test.sh's fuzz stage as `admission_fuzzer`, and replayed over the corpus with
// deterministic mutations by admission_fuzz_test in every build.
//
// Each input is POSTed as the body to every one of the eleven paths. Properties, checked with abort() so
// libFuzzer records the input: Serve never throws; a 200 answer is an AdmissionReview naming the request's uid;
// a patch, when there is one, applies to the request's object (the API server would refuse it otherwise).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "tephra/api/defaults.h"
#include "tephra/api/lookup.h"
#include "tephra/api/core_v1.h"
#include "tephra/webhooks/admission.h"

namespace {

using tephra::api::json;

void Check(bool ok, const char* what, std::string_view body) {
  if (ok) return;
  std::fprintf(stderr, "admission fuzz property violated: %s\nbody: %.*s\n", what,
               static_cast<int>(std::min<size_t>(body.size(), 2000)), body.data());
  std::abort();
}

const tephra::webhooks::Admitter& TheAdmitter() {
  static tephra::api::FakeClusterLookup* lookup = [] {
    auto* l = new tephra::api::FakeClusterLookup();
    l->AddQueue("root").AddQueue("default", "root").AddQueue("closed", "root", "Closed");
    l->namespace_annotations["ns"] = {{"scheduling.volcano.sh/queue-name", "default"}};
    return l;
  }();
  static tephra::webhooks::Admitter* a = [] {
    std::set<std::string> all;
    for (const auto& e : tephra::webhooks::Endpoints()) all.emplace(e.path);
    return new tephra::webhooks::Admitter({}, lookup, all);
  }();
  return *a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto& admitter = TheAdmitter();
  for (const auto& ep : tephra::webhooks::Endpoints()) {
    tephra::webhooks::HttpReply r;
    try {
      r = admitter.Serve(ep.path, "application/json", body);
    } catch (...) {
      Check(false, "Serve threw", body);
    }
    Check(r.status == 200 || r.status == 400, "status is neither 200 nor 400", body);
    if (r.status != 200) continue;
    json answer = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    Check(!answer.is_discarded() && answer.is_object() && answer.contains("response"), "answer not a review", body);
    auto req = tephra::webhooks::DecodeAdmissionReview(body);
    Check(req.ok(), "answered 200 to a body that does not decode", body);
    Check(answer["response"]["uid"] == req->uid, "uid not echoed", body);
    if (answer["response"].contains("patch")) {
      auto text = tephra::api::Base64Decode(answer["response"]["patch"].get<std::string>());
      Check(text.ok(), "patch not base64", body);
      json ops = json::parse(*text, nullptr, false);
      Check(ops.is_array(), "patch not a JSON array", body);
      Check(tephra::api::ApplyJsonPatch(req->object, ops).ok(), "patch does not apply to the request's object", body);
    }
  }
  return 0;
}
