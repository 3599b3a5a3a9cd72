// The self-signed CA and serving pair of `tephra webhook` (kube/certs.h).
#include "tephra/kube/certs.h"

#include <gtest/gtest.h>

namespace tephra::kube {
namespace {

TEST(CertsTest, ServingPairAndRenewalUnderTheSameCa) {
  CertificateRequest req;
  req.common_name = "svc.ns.svc";
  req.dns_names = {"svc.ns.svc", "localhost"};
  req.ip_addresses = {"127.0.0.1", "::1"};
  req.validity = std::chrono::hours(2);
  auto b = GenerateServingCertificate(req);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_NE(b->ca_cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(b->key_pem.find("PRIVATE KEY"), std::string::npos);
  auto not_after = CertificateNotAfter(b->cert_pem);
  ASSERT_TRUE(not_after.ok());
  const auto left = *not_after - std::chrono::system_clock::now();
  EXPECT_GT(left, std::chrono::minutes(118));
  EXPECT_LE(left, std::chrono::minutes(121));
  // The CA outlives the serving certificate.
  EXPECT_GT(*CertificateNotAfter(b->ca_cert_pem), *not_after + std::chrono::hours(10));

  auto r = RenewServingCertificate(*b, req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ca_cert_pem, b->ca_cert_pem);  // the caBundle does not change
  EXPECT_NE(r->cert_pem, b->cert_pem);
  EXPECT_NE(r->key_pem, b->key_pem);
}

TEST(CertsTest, BadInputIsAnError) {
  CertificateRequest req;
  req.common_name = "x";
  req.ip_addresses = {"not-an-ip"};
  auto b = GenerateServingCertificate(req);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("not-an-ip"), std::string::npos);
  EXPECT_FALSE(CertificateNotAfter("garbage").ok());
  CertificateBundle wrong;
  wrong.ca_cert_pem = "x";
  EXPECT_FALSE(RenewServingCertificate(wrong, CertificateRequest{}).ok());
}

}  // namespace
}  // namespace tephra::kube
